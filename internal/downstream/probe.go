package downstream

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/fusebox/fusebox/internal/egress"
)

// ProbeTimeout bounds one probe call.
const ProbeTimeout = 5 * time.Second

// HTTPProber calls health URLs with client (the guarded dialer's, which
// follows no redirect): a 2xx within ProbeTimeout is a good answer. What
// it keeps is the status code or the class of the failure, never the
// body, which is the server's to say and is not read past 4 KiB.
func HTTPProber(client *http.Client, now func() time.Time) Prober {
	return func(ctx context.Context, url string) Answer {
		start := now()
		ctx, cancel := context.WithTimeout(ctx, ProbeTimeout)
		defer cancel()
		a := Answer{At: start}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			a.Said = "not a URL"
			return a
		}
		req.Header.Set("User-Agent", "Fusebox-probe")
		resp, err := client.Do(req)
		a.Took = now().Sub(start)
		if err != nil {
			switch {
			case errors.Is(err, egress.ErrRefused):
				a.Said = "refused by the egress policy"
			case errors.Is(err, context.DeadlineExceeded):
				a.Said = "no answer within " + ProbeTimeout.String()
			default:
				a.Said = egress.Class(err)
			}
			return a
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
		_ = resp.Body.Close()
		a.Good = resp.StatusCode >= 200 && resp.StatusCode < 300
		a.Said = strconv.Itoa(resp.StatusCode)
		return a
	}
}
