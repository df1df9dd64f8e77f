package web

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"time"
)

// intakeTally counts the machine calls Fusebox accepted (reports, OTLP
// exports, pings, webhooks) per app, for one summary line a minute each:
// a hundred hosts exporting every second would otherwise write hundreds
// of lines a second nobody reads. Refusals and errors are still logged
// one line each.
type intakeTally struct {
	mu  sync.Mutex
	per map[string]*intakeCount
}

type intakeCount struct {
	calls, slow int
	bytes       int64
}

// maxTallied bounds the keys a minute keeps; past it, calls count under
// "other" (a key is an app verified by its key, or a kind of call).
const maxTallied = 5000

// slowCall is how long an accepted call may take before the summary
// counts it as slow.
const slowCall = time.Second

func (t *intakeTally) add(key string, took time.Duration, bytes int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.per == nil {
		t.per = map[string]*intakeCount{}
	}
	n, ok := t.per[key]
	if !ok {
		if len(t.per) >= maxTallied {
			key = "other"
		}
		if n, ok = t.per[key]; !ok {
			n = &intakeCount{}
			t.per[key] = n
		}
	}
	n.calls++
	n.bytes += bytes
	if took >= slowCall {
		n.slow++
	}
}

// flush logs one line per key counted since the last flush, and starts
// over.
func (t *intakeTally) flush(ctx context.Context, log *slog.Logger) {
	t.mu.Lock()
	per := t.per
	t.per = nil
	t.mu.Unlock()
	keys := make([]string, 0, len(per))
	for k := range per {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		n := per[k]
		log.LogAttrs(ctx, slog.LevelInfo, "machine calls accepted", slog.String("from", k),
			slog.Int("calls", n.calls), slog.Int("slow", n.slow), slog.Int64("bytes", n.bytes))
	}
}

// LogIntakeSummary writes what the machine intake accepted since it was
// last called: one line per app (or kind of call). Fusebox calls it once
// a minute.
func (s *Server) LogIntakeSummary(ctx context.Context) { s.tally.flush(ctx, s.Logger) }
