package web

import (
	"fmt"
	"net/http"
	"sort"
	"time"

	"github.com/labstack/echo/v4"
	"golang.org/x/sync/errgroup"

	"github.com/fusebox/fusebox/internal/access"
	"github.com/fusebox/fusebox/internal/alerts"
	"github.com/fusebox/fusebox/internal/audit"
	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/fault"
	"github.com/fusebox/fusebox/internal/jobs"
	"github.com/fusebox/fusebox/internal/setaside"
	"github.com/fusebox/fusebox/internal/spoken"
	"github.com/fusebox/fusebox/internal/views"
)

// overviewShow renders the home page from storage. htmx's periodic refresh
// asks for the body alone.
func (s *OpsPages) overviewShow(c echo.Context) error {
	// The reads are independent: run them side by side, so the page costs
	// the slowest read rather than their sum.
	var (
		apps     []circuit.App
		circuits []circuit.Circuit
		counts   map[string]circuit.Counts
		jobList  []jobs.Job
		recent   []audit.Entry
		rates    []circuit.MinuteCount
	)
	g, ctx := errgroup.WithContext(c.Request().Context())
	g.Go(func() (err error) { apps, err = s.Apps.List(ctx); return err })
	g.Go(func() (err error) {
		if circuits, err = s.Circuits.Recent(ctx, listFreshness); err != nil {
			return err
		}
		counts, err = s.Breakers.Failing(ctx, circuits) // a circuit left out has no failure to count
		return err
	})
	g.Go(func() (err error) { jobList, err = s.Jobs.List(ctx); return err })
	g.Go(func() (err error) { recent, err = s.Audit.Recent(ctx, s.Now(), scopeOf(c).AuditRead(8)); return err })
	g.Go(func() (err error) { rates, err = s.Rates.Since(ctx, s.Now().Add(-time.Hour)); return err })
	var status circuit.Status
	g.Go(func() (err error) { status, err = s.Status.Evaluator(ctx); return err })
	var failing []views.FailingRow
	g.Go(func() (err error) {
		failing, err = failingRows(ctx, s.Delivery, func(alerts.Health) bool { return scopeOf(c).SeesFaults() })
		return err
	})
	var windows []jobs.Window
	g.Go(func() (err error) { windows, err = s.weeks.windows.Windows(ctx); return err })
	var kept map[string]setaside.AppSetAside
	if s.Kept != nil {
		g.Go(func() error {
			var err error
			kept, err = s.Kept.All(ctx)
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	// What another team owns is not counted, listed or named.
	sc, owners := scopeOf(c), access.TeamOf(apps)
	for app := range kept {
		if !sc.SeesApp(owners, app) {
			delete(kept, app)
		}
	}
	growing := growingRows(kept, s.Now())
	circuits, jobList, apps = sc.Circuits(owners, circuits), sc.Jobs(owners, jobList), sc.Apps(apps)
	recent, err := s.auditEntries(c, recent, 8)
	if err != nil {
		return err
	}
	faults := faultRows(s.Faults.List())
	if !sc.SeesFaults() {
		faults = nil // rows of every table: an admin's to mend
	}
	// Next expected and the last 7 days, as /jobs shows them.
	weeks, err := s.weeks.allOf(c, jobList, windows, apps)
	if err != nil {
		return err
	}
	people, ownJobs := splitOwn(jobList)
	own := jobRows(apps, ownJobs, weeks)
	m := views.Overview{
		Page:           s.page(c, "Overview", "overview"),
		EvaluatorStale: s.evaluatorStale(status),
		Faults:         faults,
		Failing:        failing,
		SetAside:       growing,
		Apps:           len(apps),
		Circuits:       circuitRows(apps, needAttention(circuits, counts), counts, sparks(rates, s.Now())),
		Jobs:           jobRows(apps, people, weeks),
		Own:            own,
		OwnTrouble:     ownTrouble(own),
		Storms:         storms(scopeOf(c).Operated(apps), circuits), // resumed together only where the person may act
		StateCounts:    stateCounts(circuits),
		JobCounts:      jobCounts(people),
		Recent:         auditRows(recent),
	}
	if c.Request().Header.Get("HX-Request") == "true" {
		return render(c, http.StatusOK, views.OverviewBody(m))
	}
	return render(c, http.StatusOK, views.OverviewPage(m))
}

// needAttention picks the circuits the overview lists: not closed, drifting
// or failing now; at most 50, the full list is on the circuits page.
func needAttention(cs []circuit.Circuit, counts map[string]circuit.Counts) []circuit.Circuit {
	var out []circuit.Circuit
	for _, c := range cs {
		if c.State != circuit.Closed || c.Drift != "" || (len(counts) > 0 && counts[c.ID()].Window > 0) {
			out = append(out, c)
		}
		if len(out) == 50 {
			break
		}
	}
	return out
}

func stateTone(st circuit.State) string {
	switch st {
	case circuit.Closed:
		return "ok"
	case circuit.Open, circuit.ForcedOpen:
		return "bad"
	case circuit.HalfOpen, circuit.Throttled:
		return "warn"
	}
	return "muted"
}

func statusTone(st jobs.Status) string {
	switch st {
	case jobs.Up:
		return "ok"
	case jobs.Missing, jobs.Failing:
		return "bad"
	case jobs.Late:
		return "warn"
	}
	return "muted"
}

func stateCounts(cs []circuit.Circuit) []views.Count {
	order := circuit.States
	n := map[circuit.State]int{}
	for _, c := range cs {
		n[c.State]++
	}
	out := make([]views.Count, len(order))
	for i, st := range order {
		out[i] = views.Count{Key: "circuits-" + st.String(), Label: "circuits " + st.String(), N: n[st], Tone: stateTone(st)}
	}
	return out
}

func jobCounts(js []jobs.Job) []views.Count {
	healthy, attention := 0, 0
	for _, j := range js {
		if j.Status.Healthy() {
			healthy++
		} else {
			attention++
		}
	}
	return []views.Count{
		{Key: "jobs-healthy", Label: "jobs healthy", N: healthy, Tone: "ok"},
		{Key: "jobs-attention", Label: "jobs need attention", N: attention, Tone: "bad"},
	}
}

// appOf finds an app by id; the zero App when there is none.
func appOf(apps []circuit.App, id string) circuit.App {
	a, _ := appListed(apps, id)
	return a
}

// appListed finds an app by id, and says whether it is listed.
func appListed(apps []circuit.App, id string) (circuit.App, bool) {
	for _, a := range apps {
		if a.ID == id {
			return a, true
		}
	}
	return circuit.App{}, false
}

func appName(apps []circuit.App, id string) string {
	for _, a := range apps {
		if a.ID == id && a.DisplayName != "" {
			return a.DisplayName
		}
	}
	return id
}

// readsHub reports whether Fusebox reads the app's checkpoints and hub, so
// a count of the events waiting can be shown.
func readsHub(apps []circuit.App, id string) bool {
	for _, a := range apps {
		if a.ID == id {
			return a.HostStorage != "" && a.EventHubs != ""
		}
	}
	return false
}

func circuitRows(apps []circuit.App, cs []circuit.Circuit, counts map[string]circuit.Counts, spark map[string][]int) []views.CircuitRow {
	rows := make([]views.CircuitRow, len(cs))
	for i, c := range cs {
		rows[i] = views.CircuitRow{
			AppID: c.AppID, App: appName(apps, c.AppID), Function: c.Function, Href: circuitHref(c),
			State: c.State.String(), Tone: stateTone(c.State),
			Rule:  c.RuleText(),
			Count: counts[c.ID()].Counted, Threshold: c.Threshold,
			ChangedAt: c.ChangedAt, Reason: c.Reason, Drift: c.Drift != "", Pending: c.Pending(),
			Spark:   spark[c.ID()],
			Waiting: c.State.TriggerOff() && c.Consumes().Hub != "" && readsHub(apps, c.AppID),
		}
		if rows[i].Spark == nil {
			rows[i].Spark = make([]int, 60)
		}
	}
	return rows
}

// jobRows shows jobs; weeks, when given, add the next slot and the 7-day
// success rate.
func jobRows(apps []circuit.App, js []jobs.Job, weeks map[string]jobWeek) []views.JobRow {
	rows := make([]views.JobRow, len(js))
	for i, j := range js {
		app := ""
		if j.AppID != "" {
			app = appName(apps, j.AppID)
		}
		rows[i] = views.JobRow{ID: j.ID, Name: j.Name, App: app, Schedule: j.Schedule, TimeZone: j.TimeZone,
			Status: j.Status.String(), Tone: statusTone(j.Status), LastRunAt: j.LastRunAt, Success: -1}
		if w, ok := weeks[j.ID]; ok {
			rows[i].NextRun, rows[i].Success, rows[i].Problem = w.next, w.success, w.problem
		}
	}
	return rows
}

func auditRows(es []audit.Entry) []views.AuditRow {
	rows := make([]views.AuditRow, len(es))
	for i, e := range es {
		rows[i] = views.AuditRow{At: e.At, Actor: e.Actor, Action: e.Action, Target: e.Target, Detail: e.Detail}
	}
	return rows
}

// evaluatorStale says, for people, that the evaluator has stalled, or "".
func (s *OpsPages) evaluatorStale(st circuit.Status) string {
	now := s.Now()
	if !st.Stale(now, s.Config.EvaluatorInterval) {
		return ""
	}
	if st.LastTickAt.IsZero() {
		return "The evaluator has not finished a tick yet: circuits are not counted or tripped. If this lasts, check that an instance is running and can reach Table Storage."
	}
	who := ""
	if st.Leader != "" {
		who = " on " + st.Leader
	}
	return fmt.Sprintf("The evaluator last finished a tick %s ago%s (it ticks every %s): circuits are not counted or tripped meanwhile. A stuck holder gives up its lease after %s and another instance takes over; if none does, check the instances' logs.",
		now.Sub(st.LastTickAt.Add(st.TickDuration)).Round(time.Second), who, spoken.Duration(s.Config.EvaluatorInterval), spoken.Duration(s.Config.EvaluatorDeadline))
}

func faultRows(fs []fault.Row) []views.FaultRow {
	out := make([]views.FaultRow, 0, min(len(fs), 50))
	for _, f := range fs {
		if len(out) == 50 {
			break
		}
		out = append(out, views.FaultRow{Table: f.Table, Key: f.Key, Problem: f.Problem})
	}
	return out
}

// growingRows are the set-aside queues that grew in the last hour, every
// app's, most grown first.
func growingRows(all map[string]setaside.AppSetAside, now time.Time) []views.SetAsideRow {
	var rows []views.SetAsideRow
	for _, kept := range all {
		for _, r := range setAsideRows(kept, "", now) {
			if r.Growth > 0 {
				rows = append(rows, r)
			}
		}
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].Growth > rows[j].Growth })
	return rows
}

// splitOwn puts people's jobs first and Fusebox's own loops aside.
func splitOwn(js []jobs.Job) (people, own []jobs.Job) {
	for _, j := range js {
		if j.Internal() {
			own = append(own, j)
		} else {
			people = append(people, j)
		}
	}
	return people, own
}

// ownTrouble are the loops late, missing or failing.
func ownTrouble(rows []views.JobRow) []views.JobRow {
	var out []views.JobRow
	for _, r := range rows {
		if r.Tone == "bad" || r.Tone == "warn" {
			out = append(out, r)
		}
	}
	return out
}

// storms are the apps with more than one circuit off, for operators.
func storms(apps []circuit.App, cs []circuit.Circuit) []views.StormLink {
	off := circuit.Storms(cs)
	var out []views.StormLink
	for _, a := range apps {
		if off[a.ID] > 0 {
			out = append(out, views.StormLink{App: a.ID, Name: appName(apps, a.ID), Open: off[a.ID]})
		}
	}
	return out
}
