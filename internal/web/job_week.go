package web

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
	"golang.org/x/sync/errgroup"

	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/hostinsight"
	"github.com/fusebox/fusebox/internal/jobs"
)

// jobWeek is a job's last seven days: its slots judged against its runs.
type jobWeek struct {
	results []jobs.SlotResult
	next    time.Time
	success float64
	// problem says, for people, what of the week could not be read: its
	// runs (the store did not answer), or only its newest runs.
	problem string
}

// weekAssessor assesses jobs' last seven days, for the job pages and the
// overview alike.
type weekAssessor struct {
	apps    circuit.AppStore
	windows jobs.WindowStore
	runs    *jobs.RunCache
	hosts   *hostinsight.Source // nil: no timer status
	now     func() time.Time
}

// jobWeek assesses one job's last seven days.
func (s *weekAssessor) one(c echo.Context, j jobs.Job) (jobWeek, error) {
	ws, err := s.windows.Windows(c.Request().Context())
	if err != nil {
		return jobWeek{}, err
	}
	apps, err := s.appsByID(c)
	if err != nil {
		return jobWeek{}, err
	}
	return s.assessWeek(c, j, ws, apps)
}

// appsByID reads the apps once for pages that assess many jobs.
func (s *weekAssessor) appsByID(c echo.Context) (map[string]circuit.App, error) {
	list, err := s.apps.List(c.Request().Context())
	if err != nil {
		return nil, err
	}
	return byID(list), nil
}

func byID(list []circuit.App) map[string]circuit.App {
	out := make(map[string]circuit.App, len(list))
	for _, a := range list {
		out[a.ID] = a
	}
	return out
}

// all assesses many jobs, reading the maintenance windows and the apps
// once.
func (s *weekAssessor) all(c echo.Context, js []jobs.Job) (map[string]jobWeek, error) {
	ws, err := s.windows.Windows(c.Request().Context())
	if err != nil {
		return nil, err
	}
	apps, err := s.apps.List(c.Request().Context())
	if err != nil {
		return nil, err
	}
	return s.allOf(c, js, ws, apps)
}

// allOf is all with the windows and apps already read (the overview reads
// them beside its other reads).
func (s *weekAssessor) allOf(c echo.Context, js []jobs.Job, ws []jobs.Window, list []circuit.App) (map[string]jobWeek, error) {
	apps := byID(list)
	// One read of runs per job: side by side, so a page of many jobs costs
	// about one read, not one per job.
	out := make(map[string]jobWeek, len(js))
	var mu sync.Mutex
	var g errgroup.Group
	g.SetLimit(8)
	// A job whose runs cannot be read is said on its row; the others are
	// shown.
	for _, j := range js {
		g.Go(func() error {
			w, err := s.assessWeek(c, j, ws, apps)
			if err != nil {
				w = jobWeek{success: -1, problem: "its runs could not be read now"}
			}
			mu.Lock()
			out[j.ID] = w
			mu.Unlock()
			return nil
		})
	}
	_ = g.Wait()
	return out, nil
}

func (s *weekAssessor) assessWeek(c echo.Context, j jobs.Job, ws []jobs.Window, apps map[string]circuit.App) (jobWeek, error) {
	now := s.now()
	sched, err := j.ParseSchedule()
	if err != nil {
		return jobWeek{success: -1}, nil // an unreadable schedule shows as such, not as an error page
	}
	ctx := c.Request().Context()
	from := now.Add(-7 * 24 * time.Hour)
	first, last := j.RunRange(from, now)
	runs, more, err := s.runs.Between(ctx, j, first, last, j.RunsToRead(from, now))
	if err != nil {
		return jobWeek{}, err
	}
	var w jobWeek
	if read := jobs.ReadFrom(from, runs, more); read != from {
		from = read
		w.problem = fmt.Sprintf("more runs than its slots hold: only its newest %d were read", len(runs))
	}
	if w.results, err = jobs.Assess(j, runs, ws, from, now); err != nil {
		return jobWeek{}, err
	}
	if t, ok := s.timerOf(ctx, apps[j.AppID], j, now); ok {
		jobs.Witness(w.results, t.Last)
	}
	w.success = jobs.SuccessRate(w.results)
	if next, ok := sched.Next(now.Add(time.Second)); ok && next.Before(now.Add(7*24*time.Hour)) {
		w.next = next
	}
	return w, nil
}

// timerOf is what the host's timer status says of job j's timer, when the
// job names a function of app and the app has host storage.
func (s *weekAssessor) timerOf(ctx context.Context, app circuit.App, j jobs.Job, now time.Time) (hostinsight.Timer, bool) {
	if s.hosts == nil || j.Function == "" || app.ID == "" || app.ID != j.AppID {
		return hostinsight.Timer{}, false
	}
	snap, ok := s.hosts.Snapshot(ctx, app, now)
	if !ok {
		return hostinsight.Timer{}, false
	}
	return hostinsight.TimerOf(snap, j.Function)
}
