package demo

import (
	"context"
	"log/slog"
	"net/http"
	"time"
)

// QueueDepthCheckID is the demo job that runs every five minutes.
const QueueDepthCheckID = "5f0c6a1e-7d1b-4c59-9a55-0d6c1e2b7a03"

// RunQueueDepthCheck pings Queue depth check a few seconds after each
// five-minute slot, as the demo app's timer function would, until ctx
// ends: without it the job goes missing minutes into `make run`, which
// is not the story its week of runs tells.
func RunQueueDepthCheck(ctx context.Context, fusebox string, log *slog.Logger) {
	client := &http.Client{Timeout: 10 * time.Second}
	url := fusebox + "/ping/" + PingToken(QueueDepthCheckID)
	for {
		now := time.Now()
		next := now.Truncate(5 * time.Minute).Add(5*time.Minute + 3*time.Second)
		t := time.NewTimer(next.Sub(now))
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return
		}
		resp, err := client.Do(req)
		if err != nil {
			log.Warn("demo timer: ping of Queue depth check", "error", err)
			continue
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			log.Warn("demo timer: ping of Queue depth check", "status", resp.StatusCode)
		}
	}
}
