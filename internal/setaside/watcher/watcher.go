// Package watcher is the loop that looks at every app's set-aside queues,
// keeps what it saw, and tells people when a queue starts holding work.
package watcher

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/fusebox/fusebox/internal/alerts"
	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/lease"
	"github.com/fusebox/fusebox/internal/setaside"
	"github.com/fusebox/fusebox/internal/setaside/queues"
)

// parallel bounds how many apps' queue storage is read at once; each read
// has its own time-out (queues.Source).
const parallel = 8

// What the watcher reads and writes.
type (
	Apps interface {
		List(context.Context) ([]circuit.App, error)
	}
	Circuits interface {
		List(context.Context) ([]circuit.Circuit, error)
	}
	Kept interface {
		All(ctx context.Context) (map[string]setaside.AppSetAside, error)
		Put(ctx context.Context, appID string, q setaside.Queue, w setaside.Watch) error
		PutProblem(ctx context.Context, appID, problem string, at time.Time) error
	}
	Queues interface {
		SetAside(ctx context.Context, app circuit.App, owners setaside.Owners) ([]queues.Found, error)
	}
	Outbox interface {
		Ensure(ctx context.Context, m alerts.Message) error
	}
)

// Watcher looks at apps' poison and parking queues.
type Watcher struct {
	Apps     Apps
	Circuits Circuits
	Kept     Kept
	Queues   Queues
	Outbox   Outbox
	Now      func() time.Time
	Logger   *slog.Logger

	// reading is the apps whose queues are being read: a pass does not wait
	// for them, so an app whose storage does not answer holds up no other
	// app's next look, and a pass starts no second read of an app still in
	// flight.
	mu      sync.Mutex
	reading map[string]bool
	slots   chan struct{}
}

// Pass looks at every app's set-aside queues (one properties read and one
// one-message peek per queue), keeps what it saw, and puts a notice in the
// outbox when a queue starts holding work or grows past its app's limit
// within an hour, once per episode and destination. Each app is read on
// its own; what fails is logged and shown on its page.
func (w *Watcher) Pass(ctx context.Context, _ lease.Fence) error {
	apps, err := w.Apps.List(ctx)
	if err != nil {
		return err
	}
	cs, err := w.Circuits.List(ctx)
	if err != nil {
		return err
	}
	kept, err := w.Kept.All(ctx)
	if err != nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.reading == nil {
		w.reading, w.slots = map[string]bool{}, make(chan struct{}, parallel)
	}
	for _, app := range apps {
		if app.HostStorage == "" || w.reading[app.ID] {
			continue
		}
		w.reading[app.ID] = true
		go func() {
			w.slots <- struct{}{}
			defer func() {
				<-w.slots
				w.mu.Lock()
				delete(w.reading, app.ID)
				w.mu.Unlock()
			}()
			if err := w.watchApp(ctx, app, cs, kept[app.ID]); err != nil && ctx.Err() == nil {
				w.Logger.Warn("set-aside queues not read", "app", app.ID, "error", err)
			}
		}()
	}
	return nil
}

func (w *Watcher) watchApp(ctx context.Context, app circuit.App, cs []circuit.Circuit, kept setaside.AppSetAside) error {
	now := w.Now()
	found, err := w.Queues.SetAside(ctx, app, circuit.SetAsideOwners(app.ID, cs))
	if err != nil {
		// Fusebox's own words (queues.Source): shown on the app's page.
		return errors.Join(err, w.Kept.PutProblem(ctx, app.ID, err.Error(), now))
	}
	if kept.Problem != "" {
		if err := w.Kept.PutProblem(ctx, app.ID, "", now); err != nil {
			return err
		}
	}
	byName := map[string]setaside.Kept{}
	for _, k := range kept.Queues {
		byName[k.Name] = k
	}
	seen := map[string]bool{}
	var errs []error
	look := func(q setaside.Queue, count int, oldest, expires time.Time) {
		seen[q.Name] = true
		watch, changes := setaside.Observe(byName[q.Name].Watch, count, oldest, now, app.SetAsideLimit)
		watch, expiring := setaside.Expiry(watch, expires, now)
		changes = append(changes, expiring...)
		if err := w.Kept.Put(ctx, app.ID, q, watch); err != nil {
			errs = append(errs, err)
			return // told next time: the episode is not written yet
		}
		dests := alerts.SetAsideDestinations(app, cs, q.Function)
		for _, ch := range changes {
			for _, m := range alerts.SetAsideMessages(app.ID, q.Name, watch.Episode, ch, dests, now) {
				if err := w.Outbox.Ensure(ctx, m); err != nil {
					errs = append(errs, err)
				}
			}
		}
	}
	for _, f := range found {
		look(f.Queue, f.Count, f.Oldest, f.Expires)
	}
	// A queue that is gone (deleted by someone) holds nothing.
	for _, k := range kept.Queues {
		if !seen[k.Name] && k.Count > 0 {
			look(k.Queue, 0, time.Time{}, time.Time{})
		}
	}
	return errors.Join(errs...)
}
