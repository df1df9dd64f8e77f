package web

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
)

// exportSlots bounds the OTLP exports being read and decoded at once, so
// what they cost in memory has a ceiling (docs/benchmarks.md, "OTLP under
// attack"): each costs at most its body (4 MiB), the body gunzipped (4 MiB)
// and its decoding (otlp.MaxDecoded, 32 MiB). At most perApp exports of
// one app and total of all apps run at once; the next waits for a slot up
// to wait, then is told to send again later (429 for its app's share, 503
// for the instance's), which exporters do. A waiting export has read
// nothing.
//
// A reserve of the instance's slots is kept for apps that hold none: an
// app that holds one already may not take the last reserve free ones, so
// two apps at their share never leave a third waiting.
type exportSlots struct {
	total   chan struct{}
	perApp  int
	reserve int
	wait    time.Duration

	mu   sync.Mutex
	busy map[string]int
	free chan struct{} // closed and replaced when an app's slot frees
}

func newExportSlots(total, perApp, reserve int, wait time.Duration) *exportSlots {
	return &exportSlots{total: make(chan struct{}, total), perApp: perApp, reserve: reserve, wait: wait, busy: map[string]int{}, free: make(chan struct{})}
}

// take waits for a slot of app's and one of the instance's; release gives
// both back.
func (e *exportSlots) take(ctx context.Context, app string) (release func(), err error) {
	ctx, cancel := context.WithTimeout(ctx, e.wait)
	defer cancel()
	for {
		e.mu.Lock()
		held := e.busy[app]
		if held < e.perApp && (held == 0 || cap(e.total)-len(e.total) > e.reserve) {
			e.busy[app]++
			e.mu.Unlock()
			break
		}
		freed := e.free
		e.mu.Unlock()
		select {
		case <-freed:
		case <-ctx.Done():
			return nil, echo.NewHTTPError(http.StatusTooManyRequests, "This app's other exports are still being taken; send again shortly.")
		}
	}
	select {
	case e.total <- struct{}{}:
	case <-ctx.Done():
		e.giveBack(app)
		return nil, echo.NewHTTPError(http.StatusServiceUnavailable, "This instance is taking as many exports as it may at once; send again shortly.")
	}
	return func() { <-e.total; e.giveBack(app) }, nil
}

func (e *exportSlots) giveBack(app string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.busy[app]--; e.busy[app] <= 0 {
		delete(e.busy, app)
	}
	close(e.free)
	e.free = make(chan struct{})
}

// reading holds a reading slot while an export's body is read and taken,
// and gives the body readWithin to arrive: a client that sends a byte a
// second holds one of its app's reading slots for that long, and no
// decoding slot at all. It runs after the key gate, which names the app.
func (e *exportSlots) reading(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		appID, _ := c.Get(ctxApp).(string)
		release, err := e.take(c.Request().Context(), appID)
		if err != nil {
			c.Response().Header().Set("Retry-After", "1")
			return err
		}
		defer release()
		// Not every connection can set a deadline (a test's recorder);
		// the server's own read timeout still holds then.
		_ = http.NewResponseController(c.Response().Writer).SetReadDeadline(time.Now().Add(readWithin))
		return next(c)
	}
}

// readWithin is how long an export's body may take to arrive: a host's
// batch of 512 spans is about 250 kB.
const readWithin = 10 * time.Second

// decode holds one of app's decoding slots while fn decodes and takes an
// export whose body was read; a refusal carries Retry-After.
func (e *exportSlots) decode(ctx context.Context, c echo.Context, app string, fn func() error) error {
	release, err := e.take(ctx, app)
	if err != nil {
		if c != nil {
			c.Response().Header().Set("Retry-After", "1")
		}
		return err
	}
	defer release()
	return fn()
}
