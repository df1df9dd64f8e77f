package web

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/fusebox/fusebox/internal/jobs"
	"github.com/fusebox/fusebox/internal/spoken"
	"github.com/fusebox/fusebox/internal/views"
)

func slotTone(st jobs.SlotStatus) string {
	switch st {
	case jobs.SlotOK:
		return "ok"
	case jobs.SlotUnreported:
		return "info"
	case jobs.SlotMissed, jobs.SlotFailed:
		return "bad"
	case jobs.SlotLate, jobs.SlotOverran, jobs.SlotOverlapping:
		return "warn"
	}
	return "muted"
}

// worse orders slot statuses for the heatmap: a cell shows its worst slot.
var worse = map[jobs.SlotStatus]int{jobs.SlotPending: 0, jobs.SlotSkipped: 0, jobs.SlotOK: 1, jobs.SlotUnreported: 1, jobs.SlotRunning: 2, jobs.SlotLate: 3, jobs.SlotOverlapping: 4, jobs.SlotOverran: 5, jobs.SlotFailed: 6, jobs.SlotMissed: 7}

// jobShow is one job's page: schedule, how to ping, a heatmap of its slots,
// the gaps, run durations and the run list.
func (s *JobPages) jobShow(c echo.Context) error {
	ctx := c.Request().Context()
	j, err := s.jobOf(c)
	if err != nil {
		return err
	}
	week, err := s.weeks.one(c, j)
	if err != nil {
		return err
	}
	var from jobs.RunCursor
	if pk, rk := c.QueryParam("pk"), c.QueryParam("rk"); pk != "" || rk != "" {
		from = jobs.RunCursor{NextPartitionKey: pk, NextRowKey: rk}
	}
	runs, next, err := s.Runs.Recent(ctx, j.ID, 25, from)
	if err != nil {
		return err
	}
	apps, err := s.Apps.List(ctx)
	if err != nil {
		return err
	}
	base := s.Config.BaseURL.String()
	m := views.JobDetail{
		Page: s.page(c, j.Name, "jobs"), ID: j.ID, Name: j.Name, Function: j.Function, Schedule: j.Schedule, TimeZone: j.TimeZone,
		Status: j.Status.String(), Tone: statusTone(j.Status), Grace: spoken.Duration(j.Grace), NextRun: week.next,
		PingURL: s.pingURL(c, j), Success: views.Pct(week.success), Unread: week.problem,
	}
	if j.ExtraRuns > 0 {
		m.Extra = fmt.Sprintf("%d runs came past %d in one slot's window: counted here, not stored", j.ExtraRuns, jobs.MaxRunsPerSlot)
	}
	if j.AppID != "" {
		m.App = appName(apps, j.AppID)
	}
	m.CanRun = s.actsOnJob(c, j) && j.AppID != "" && j.Function != ""
	m.CanEdit = s.actsOnJob(c, j)
	if j.MaxDuration > 0 {
		m.MaxRun = spoken.Duration(j.MaxDuration)
	}
	if j.Slug != "" && s.Config.PingKey != "" {
		m.SlugURL = base + "/ping/<ping key>/" + j.Slug
	}
	if ends := j.PingByIDEnds(s.Config.PingIDGrace); j.PingsByID(s.Now(), s.Config.PingIDGrace) {
		m.IDPingsUntil = ends.UTC().Format("Mon 2 Jan 2006 15:04 MST")
	}
	ws, err := s.Windows.Windows(ctx)
	if err != nil {
		return err
	}
	now := s.Now()
	for _, w := range jobs.Upcoming(j, ws, now) {
		line := fmt.Sprintf("%s – %s: %s", w.From.UTC().Format("Mon 2 Jan 15:04"), w.Until.UTC().Format("Mon 2 Jan 15:04 MST"), w.Reason)
		if w.Recurring() {
			var next []string
			for _, t := range w.Next(now, 3) {
				next = append(next, t.In(time.UTC).Format("Mon 2 Jan 15:04 MST"))
			}
			line = fmt.Sprintf("every %s (%s) for %s: %s; next %s", w.Recurs, w.TimeZone, spoken.Duration(w.Duration), w.Reason, strings.Join(next, ", "))
		}
		m.Maintenance = append(m.Maintenance, line)
	}
	flips, err := s.Jobs.Flips(ctx, j.ID, 20)
	if err != nil {
		return err
	}
	for _, f := range flips {
		m.Flips = append(m.Flips, views.JobFlipRow{At: f.At, From: f.From.String(), To: f.To.String(), ToTone: statusTone(f.To), Why: f.Why})
	}
	m.Heat = heat(week.results, s.Now())
	if t, ok := s.weeks.timerOf(ctx, appOf(apps, j.AppID), j, s.Now()); ok {
		m.Timer = &views.Timer{Last: t.Last, Next: t.Next, Written: t.LastUpdated, Now: s.Now()}
	}
	loc, _ := jobs.LoadZone(j.TimeZone)
	for _, g := range jobs.Gaps(week.results, 30) {
		m.Gaps = append(m.Gaps, gapRow(g, loc))
	}
	for _, r := range runs {
		row := views.RunRow{Start: r.Start, State: r.State, Log: r.Log}
		row.Tone = map[string]string{"ok": "ok", "failed": "bad", "running": "info", "log": "muted"}[r.State]
		if !r.End.IsZero() && r.State != "log" {
			row.Duration = spoken.Duration(r.End.Sub(r.Start).Round(time.Second))
		}
		if r.ExitStatus >= 0 {
			row.Exit = fmt.Sprint(r.ExitStatus)
		}
		m.Runs = append(m.Runs, row)
	}
	for i := len(runs) - 1; i >= 0; i-- {
		if r := runs[i]; !r.End.IsZero() && r.State != "log" {
			m.Durations = append(m.Durations, int(r.End.Sub(r.Start).Seconds()))
		}
	}
	if !next.IsZero() {
		m.OlderRuns = "/jobs/" + url.PathEscape(j.ID) + "?pk=" + url.QueryEscape(next.NextPartitionKey) + "&rk=" + url.QueryEscape(next.NextRowKey)
	}
	return render(c, http.StatusOK, views.JobPage(m))
}

// heat lays a week of slot results out as days by hours, in UTC.
func heat(results []jobs.SlotResult, now time.Time) []views.HeatDay {
	days := make([]views.HeatDay, 7)
	today := now.UTC().Truncate(24 * time.Hour)
	for i := range days {
		days[i].Label = today.AddDate(0, 0, i-6).Format("Mon 2 Jan")
	}
	best := make([][24]int, 7)
	for _, r := range results {
		d := 6 - int(today.Sub(r.At.UTC().Truncate(24*time.Hour))/(24*time.Hour))
		if d < 0 || d > 6 {
			continue
		}
		h := r.At.UTC().Hour()
		if cur := days[d].Hours[h]; cur == "" || worse[r.Status] > best[d][h] {
			days[d].Hours[h], best[d][h] = r.Status.String(), worse[r.Status]
		}
	}
	return days
}

// gapRow says a gap as a person reads it: "Mon 30 Nov 06:35–08:05 UTC: 19
// slots missed", with the job's own zone beside UTC.
func gapRow(g jobs.Gap, loc *time.Location) views.GapRow {
	r := views.GapRow{At: g.To, Status: g.Status.String(), Tone: slotTone(g.Status), Slots: g.Slots}
	if g.Slots > 1 {
		r.Each = g.Each
	}
	span := func(l *time.Location) string {
		from, to := g.From.In(l), g.To.In(l)
		if g.Slots == 1 {
			return from.Format("Mon 2 Jan 15:04 MST")
		}
		if from.YearDay() == to.YearDay() && from.Year() == to.Year() {
			return from.Format("Mon 2 Jan 15:04") + "–" + to.Format("15:04 MST")
		}
		return from.Format("Mon 2 Jan 15:04") + " – " + to.Format("Mon 2 Jan 15:04 MST")
	}
	r.When = span(time.UTC)
	if loc != nil && loc.String() != "UTC" {
		r.Local = span(loc)
	}
	if g.Slots > 1 {
		r.Status = fmt.Sprintf("%d slots %s", g.Slots, g.Status)
	}
	return r
}
