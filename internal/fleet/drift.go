package fleet

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/fusebox/fusebox/internal/circuit"
)

// This file tells what changed in Azure since an app was guarded: the
// functions nothing guards, the circuits and jobs whose function is gone,
// the triggers that changed kind, hub or queue, and sites that are gone.

// ErrGone says ARM has no such site: it was deleted or renamed.
var ErrGone = errors.New("fleet: the site is gone")

// Drift is what one app's functions in ARM say of its circuits and jobs.
type Drift struct {
	Unguarded    []string // event-driven functions without a circuit
	Untimed      []string // timer functions without a job
	GoneCircuits []string // circuits whose function ARM no longer lists
	GoneJobs     []string // jobs whose function ARM no longer lists
	Changed      []Change // circuits whose trigger changed under them
}

// Change is a circuit whose function's trigger is not what it guards.
type Change struct {
	Function string
	Was, Now string // in words: "hub orders", "queue work", "an eventHub trigger"
}

// Any says whether anything drifted.
func (d Drift) Any() bool {
	return len(d.Unguarded)+len(d.Untimed)+len(d.GoneCircuits)+len(d.GoneJobs)+len(d.Changed) > 0
}

// DriftOf compares an app's functions as ARM lists them with its circuits
// and the functions its jobs name.
func DriftOf(fns []Function, circuits []circuit.Circuit, jobFunctions []string) Drift {
	var d Drift
	listed := make(map[string]Function, len(fns))
	for _, f := range fns {
		listed[f.Name] = f
	}
	guarded := map[string]bool{}
	for _, c := range circuits {
		guarded[c.Function] = true
		f, ok := listed[c.Function]
		if !ok {
			d.GoneCircuits = append(d.GoneCircuits, c.Function)
			continue
		}
		if ch, changed := changeOf(c, f.Trigger); changed {
			d.Changed = append(d.Changed, ch)
		}
	}
	timed := map[string]bool{}
	for _, fn := range jobFunctions {
		if fn == "" {
			continue
		}
		timed[fn] = true
		if _, ok := listed[fn]; !ok {
			d.GoneJobs = append(d.GoneJobs, fn)
		}
	}
	for _, f := range fns {
		switch {
		case f.Problem != "":
		case EventDriven(f.Trigger.Kind) && !guarded[f.Name]:
			d.Unguarded = append(d.Unguarded, f.Name)
		case f.Trigger.Kind == Timer && !timed[f.Name]:
			d.Untimed = append(d.Untimed, f.Name)
		}
	}
	for _, s := range [][]string{d.Unguarded, d.Untimed, d.GoneCircuits, d.GoneJobs} {
		slices.Sort(s)
	}
	slices.SortFunc(d.Changed, func(a, b Change) int { return cmp.Compare(a.Function, b.Function) })
	return d
}

// changeOf says how a function's trigger differs from what its circuit
// was set up for: no longer event-driven, another hub, another queue.
func changeOf(c circuit.Circuit, t Trigger) (Change, bool) {
	ch := Change{Function: c.Function}
	switch {
	case t.Kind != "" && !EventDriven(t.Kind):
		ch.Was, ch.Now = "an event-driven trigger", "a "+t.Type
	case c.EventHub != "" && t.Kind == EventHubs && hubOf(consumes(t)) != "" && !strings.EqualFold(hubOf(c.EventHub), hubOf(consumes(t))):
		ch.Was, ch.Now = "hub "+hubOf(c.EventHub), "hub "+hubOf(consumes(t))
	case c.EventHub != "" && t.Kind != EventHubs:
		ch.Was, ch.Now = "an Event Hubs trigger", "a "+t.Type
	case c.Queue != "" && t.Kind == Queue:
		q, _ := t.Get("queueName")
		if q.Value == "" || strings.EqualFold(q.Value, c.Queue) {
			return ch, false
		}
		ch.Was, ch.Now = "queue "+c.Queue, "queue "+q.Value
	default:
		return ch, false
	}
	return ch, true
}

// hubOf is the hub of a circuit's EventHub: "hub", "hub/group" or
// "namespace/hub/group".
func hubOf(s string) string {
	parts := strings.Split(s, "/")
	switch len(parts) {
	case 3:
		return parts[1]
	default:
		return parts[0]
	}
}

// AppDrift is the last check of one app.
type AppDrift struct {
	Drift
	CheckedAt time.Time
	// Gone says ARM has no such site; Problem says why it could not be
	// checked (in Fusebox's words).
	Gone    bool
	Problem string
}

// DriftWatch checks the drift of every app switched through ARM, Every
// so often, at most Parallel at once, each within PerApp, and keeps the
// last check of each in memory for the Apps page and /metrics.
type DriftWatch struct {
	Apps interface {
		List(context.Context) ([]circuit.App, error)
	}
	Circuits interface {
		List(context.Context) ([]circuit.Circuit, error)
	}
	// JobFunctions lists the functions each app's jobs name, by app id.
	JobFunctions func(context.Context) (map[string][]string, error)
	Functions    func(ctx context.Context, app circuit.App) ([]Function, error)
	Every        time.Duration // zero: 10 minutes
	PerApp       time.Duration // zero: 15 s
	Now          func() time.Time

	mu   sync.Mutex
	last map[string]AppDrift
}

// Run checks every Every until ctx ends.
func (w *DriftWatch) Run(ctx context.Context) {
	every := cmp.Or(w.Every, 10*time.Minute)
	for {
		w.Check(ctx)
		select {
		case <-ctx.Done():
			return
		case <-time.After(every):
		}
	}
}

// Check checks every ARM app once. An app that does not answer holds up
// no other: each has its own deadline, four run at once.
func (w *DriftWatch) Check(ctx context.Context) {
	apps, err := w.Apps.List(ctx)
	if err != nil {
		return
	}
	cs, err := w.Circuits.List(ctx)
	if err != nil {
		return
	}
	jobFns, err := w.JobFunctions(ctx)
	if err != nil {
		return
	}
	byApp := map[string][]circuit.Circuit{}
	for _, c := range cs {
		byApp[c.AppID] = append(byApp[c.AppID], c)
	}
	next := map[string]AppDrift{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	slots := make(chan struct{}, 4)
	for _, app := range apps {
		if app.Switch != circuit.SwitchARM {
			continue
		}
		wg.Add(1)
		slots <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-slots }()
			actx, cancel := context.WithTimeout(ctx, cmp.Or(w.PerApp, 15*time.Second))
			defer cancel()
			d := AppDrift{CheckedAt: w.Now()}
			fns, err := w.Functions(actx, app)
			switch {
			case errors.Is(err, ErrGone):
				d.Gone, d.Problem = true, err.Error()
			case err != nil:
				d.Problem = err.Error()
			default:
				d.Drift = DriftOf(fns, byApp[app.ID], jobFns[app.ID])
			}
			mu.Lock()
			next[app.ID] = d
			mu.Unlock()
		}()
	}
	wg.Wait()
	w.mu.Lock()
	w.last = next
	w.mu.Unlock()
}

// Of is the last check of an app.
func (w *DriftWatch) Of(appID string) (AppDrift, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	d, ok := w.last[appID]
	return d, ok
}

// Unguarded counts each checked app's event-driven functions without a
// circuit, for /metrics.
func (w *DriftWatch) Unguarded() map[string]int {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make(map[string]int, len(w.last))
	for id, d := range w.last {
		if d.Problem == "" {
			out[id] = len(d.Unguarded)
		}
	}
	return out
}
