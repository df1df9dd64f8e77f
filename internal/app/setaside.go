package app

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/fusebox/fusebox/internal/alerts"
	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/lease"
	"github.com/fusebox/fusebox/internal/setaside"
	"github.com/fusebox/fusebox/internal/storage"
)

// watchParallel bounds how many apps' queue storage is read at once; each
// read has its own time-out (queues.Source).
const watchParallel = 8

// watching is the apps whose queues are being read: a pass does not wait
// for them, so an app whose storage does not answer holds up no other
// app's next look, and a pass starts no second read of an app still in
// flight.
type watching struct {
	mu    sync.Mutex
	apps  map[string]bool
	slots chan struct{}
}

// watchSetAside looks at every app's set-aside queues (one properties read
// and one one-message peek per queue), keeps what it saw, and puts a
// notice in the outbox when a queue starts holding work or grows past its
// app's limit within an hour, once per episode and destination. Each app
// is read on its own; what fails is logged and shown on its page.
func (a *App) watchSetAside(ctx context.Context, _ lease.Fence) error {
	apps, err := a.Store.Apps.List(ctx)
	if err != nil {
		return err
	}
	cs, err := a.Store.Circuits.List(ctx)
	if err != nil {
		return err
	}
	kept, err := a.Store.SetAside.All(ctx)
	if err != nil {
		return err
	}
	w := &a.watching
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.apps == nil {
		w.apps, w.slots = map[string]bool{}, make(chan struct{}, watchParallel)
	}
	for _, app := range apps {
		if app.HostStorage == "" || w.apps[app.ID] {
			continue
		}
		w.apps[app.ID] = true
		go func() {
			w.slots <- struct{}{}
			defer func() {
				<-w.slots
				w.mu.Lock()
				delete(w.apps, app.ID)
				w.mu.Unlock()
			}()
			if err := a.watchApp(ctx, app, cs, kept[app.ID]); err != nil && ctx.Err() == nil {
				a.log.Warn("set-aside queues not read", "app", app.ID, "error", err)
			}
		}()
	}
	return nil
}

func (a *App) watchApp(ctx context.Context, app circuit.App, cs []circuit.Circuit, kept storage.AppSetAside) error {
	now := a.now()
	found, err := a.queues.SetAside(ctx, app, circuit.SetAsideOwners(app.ID, cs))
	if err != nil {
		// Fusebox's own words (queues.Source): shown on the app's page.
		return errors.Join(err, a.Store.SetAside.PutProblem(ctx, app.ID, err.Error(), now))
	}
	if kept.Problem != "" {
		if err := a.Store.SetAside.PutProblem(ctx, app.ID, "", now); err != nil {
			return err
		}
	}
	byName := map[string]storage.Kept{}
	for _, k := range kept.Queues {
		byName[k.Name] = k
	}
	seen := map[string]bool{}
	var errs []error
	look := func(q setaside.Queue, count int, oldest time.Time) {
		seen[q.Name] = true
		w, changes := setaside.Observe(byName[q.Name].Watch, count, oldest, now, app.SetAsideLimit)
		if err := a.Store.SetAside.Put(ctx, app.ID, q, w); err != nil {
			errs = append(errs, err)
			return // told next time: the episode is not written yet
		}
		dests := alerts.SetAsideDestinations(app, cs, q.Function)
		for _, ch := range changes {
			for _, m := range alerts.SetAsideMessages(app.ID, q.Name, w.Episode, ch, dests, now) {
				if err := a.Store.Outbox.Ensure(ctx, m); err != nil {
					errs = append(errs, err)
				}
			}
		}
	}
	for _, f := range found {
		look(f.Queue, f.Count, f.Oldest)
	}
	// A queue that is gone (deleted by someone) holds nothing.
	for _, k := range kept.Queues {
		if !seen[k.Name] && k.Count > 0 {
			look(k.Queue, 0, time.Time{})
		}
	}
	return errors.Join(errs...)
}
