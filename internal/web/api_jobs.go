package web

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/fusebox/fusebox/internal/access"
	"github.com/fusebox/fusebox/internal/apiwire"
	"github.com/fusebox/fusebox/internal/audit"
	"github.com/fusebox/fusebox/internal/jobs"
)

func (s *JobPages) toJobJSON(c echo.Context, j jobs.Job, w jobWeek) apiwire.Job {
	out := apiwire.Job{ID: j.ID, Name: j.Name, Slug: j.Slug, App: j.AppID, Function: j.Function, Schedule: j.Schedule, TimeZone: j.TimeZone,
		GraceSeconds: int(j.Grace / time.Second), MaxDurationSeconds: int(j.MaxDuration / time.Second), Recipients: j.Recipients, Channels: j.Channels, Tags: j.Tags, Misfire: j.Misfire,
		MinDurationSeconds: int(j.MinDuration / time.Second), FailAfter: max(j.FailAfter, 1), RecoverAfter: max(j.RecoverAfter, 1), Rules: j.Rules(),
		Paused: j.Paused, Status: j.Status.String(), ExtraRuns: j.ExtraRuns, PingURL: s.pingURL(c, j), Team: j.Team}
	if out.Channels == nil {
		out.Channels = []string{}
	}
	if out.Tags == nil {
		out.Tags = []string{}
	}
	if out.Recipients == nil {
		out.Recipients = []string{}
	}
	if !j.LastRunAt.IsZero() {
		out.LastRunAt = &j.LastRunAt
	}
	if !w.next.IsZero() {
		out.NextRunAt = &w.next
	}
	if w.success >= 0 {
		out.Success7d = &w.success
	}
	return out
}

// apiJobList lists every job with its status, next slot and 7-day success.
func (s *JobPages) apiJobList(c echo.Context) error {
	all, err := s.Jobs.List(c.Request().Context())
	if err != nil {
		return err
	}
	owners, err := s.owners(c)
	if err != nil {
		return err
	}
	js, problem := filterJobs(scopeOf(c).Jobs(owners, all), c.QueryParam("tag"), c.QueryParam("status"))
	if problem != "" {
		field := "tag"
		if strings.Contains(problem, "status") {
			field = "status"
		}
		return c.JSON(http.StatusUnprocessableEntity, map[string]any{"error": problem, "fields": map[string]string{field: problem}})
	}
	weeks, err := s.weeks.all(c, js)
	if err != nil {
		return err
	}
	out := make([]apiwire.Job, 0, len(js))
	for _, j := range js {
		out = append(out, s.toJobJSON(c, j, weeks[j.ID]))
	}
	return c.JSON(http.StatusOK, map[string]any{"jobs": out})
}

// apiJobShow returns one job with the last week's gaps.
func (s *JobPages) apiJobShow(c echo.Context) error {
	j, err := s.jobOf(c)
	if err != nil {
		return err
	}
	w, err := s.weeks.one(c, j)
	if err != nil {
		return err
	}
	out := s.toJobJSON(c, j, w)
	out.Gaps = []apiwire.Gap{}
	for _, r := range w.results {
		switch r.Status {
		case jobs.SlotMissed, jobs.SlotFailed, jobs.SlotLate, jobs.SlotOverran, jobs.SlotOverlapping, jobs.SlotTooFast, jobs.SlotUnreported:
			out.Gaps = append(out.Gaps, apiwire.Gap{At: r.At, Status: r.Status.String()})
		}
	}
	return c.JSON(http.StatusOK, out)
}

type runJSON struct {
	ID         string     `json:"id"`
	State      string     `json:"state"`
	Start      time.Time  `json:"start"`
	End        *time.Time `json:"end,omitempty"`
	ExitStatus *int       `json:"exit_status,omitempty"`
	Log        string     `json:"log,omitempty"`
}

// apiJobRuns pages through a job's runs, newest first.
func (s *JobPages) apiJobRuns(c echo.Context) error {
	j, err := s.jobOf(c)
	if err != nil {
		return err
	}
	limit := 50
	if n, err := strconv.Atoi(c.QueryParam("limit")); err == nil && n > 0 && n <= 500 {
		limit = n
	}
	var from jobs.RunCursor
	if cur := c.QueryParam("cursor"); cur != "" {
		raw, err := base64.RawURLEncoding.DecodeString(cur)
		if err != nil || json.Unmarshal(raw, &from) != nil {
			return echo.NewHTTPError(http.StatusBadRequest, "The cursor is not one this API gave out.")
		}
	}
	runs, next, err := s.Runs.Recent(c.Request().Context(), j.ID, limit, from)
	if err != nil {
		return err
	}
	out := make([]runJSON, len(runs))
	for i, r := range runs {
		out[i] = runJSON{ID: r.ID, State: r.State, Start: r.Start, Log: r.Log}
		if !r.End.IsZero() {
			end := r.End
			out[i].End = &end
		}
		if r.ExitStatus >= 0 {
			e := r.ExitStatus
			out[i].ExitStatus = &e
		}
	}
	resp := map[string]any{"runs": out}
	if !next.IsZero() {
		raw, _ := json.Marshal(next)
		resp["next_cursor"] = base64.RawURLEncoding.EncodeToString(raw)
	}
	return c.JSON(http.StatusOK, resp)
}

// apiJobSave creates (POST) or replaces the settings of (PUT) a job.
func (s *JobPages) apiJobSave(c echo.Context) error {
	var in apiwire.JobInput
	if err := c.Bind(&in); err != nil {
		return echo.NewHTTPError(http.StatusBadRequest, `The body must be JSON such as {"name": "Nightly", "schedule": "0 0 1 * * *", "time_zone": "Asia/Tokyo", "grace": "10m"}.`)
	}
	var existing *jobs.Job
	status := http.StatusCreated
	if c.Param("id") != "" {
		j, err := s.jobOf(c)
		if err != nil {
			return err
		}
		existing, status = &j, http.StatusOK
	}
	j, problems := s.buildJob(c, existing, in)
	if len(problems) > 0 {
		return c.JSON(http.StatusUnprocessableEntity, map[string]any{"error": "the job's settings are not valid", "fields": problems})
	}
	s.unknownPings.clear() // its id or slug may have been pinged before it existed
	if problems, err := s.saveJob(c, j, existing == nil); err != nil {
		return err
	} else if len(problems) > 0 {
		return c.JSON(http.StatusUnprocessableEntity, map[string]any{"error": "the job's settings are not valid", "fields": problems})
	}
	p, _ := principal(c)
	action := "created job"
	if existing != nil {
		action = "changed job"
	}
	if err := s.Audit.Append(c.Request().Context(), audit.Entry{At: s.Now(), Actor: p.Name, Action: action, Target: j.Name, Job: j.ID, Detail: j.Schedule + " " + j.TimeZone}); err != nil {
		return err
	}
	w, err := s.weeks.one(c, j)
	if err != nil {
		return err
	}
	return c.JSON(status, s.toJobJSON(c, j, w))
}

// apiJobDelete removes a job, audited; Fusebox's own loops' jobs stay.
func (s *JobPages) apiJobDelete(c echo.Context) error {
	j, err := s.jobOf(c)
	if err != nil {
		return err
	}
	switch err := s.Catalog.Delete(c.Request().Context(), j.ID); {
	case errors.Is(err, jobs.ErrInternal):
		return echo.NewHTTPError(http.StatusConflict, "This job is one of Fusebox's own loops; it cannot be deleted.")
	case errors.Is(err, jobs.ErrNoJob):
		return echo.NewHTTPError(http.StatusNotFound, "There is no such job.")
	case err != nil:
		return err
	}
	p, _ := principal(c)
	owners, err := s.owners(c)
	if err != nil {
		return err
	}
	// Gone by the time it is written: its team is said here.
	if err := s.Audit.Append(c.Request().Context(), audit.Entry{At: s.Now(), Actor: p.Name, Action: "deleted job", Target: j.Name, Job: j.ID, Detail: j.Schedule + " " + j.TimeZone,
		Team: access.JobTeam(owners, j), Owned: true}); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// pingURL is a job's ping URL for operators. A ping URL records runs
// without a key, so viewers do not get it; Fusebox's own loops have none.
func (s *JobPages) pingURL(c echo.Context, j jobs.Job) string {
	if j.Internal() || !s.actsOnJob(c, j) {
		return ""
	}
	if j.PingToken == "" {
		return "" // a row written by hand without one: nothing pings it but its slug
	}
	return s.Config.BaseURL.String() + "/ping/" + j.PingToken
}

// apiJobFlips lists a job's changes of status, newest first.
func (s *JobPages) apiJobFlips(c echo.Context) error {
	j, err := s.jobOf(c)
	if err != nil {
		return err
	}
	flips, err := s.Jobs.Flips(c.Request().Context(), j.ID, 100)
	if err != nil {
		return err
	}
	type flipJSON struct {
		From string    `json:"from"`
		To   string    `json:"to"`
		At   time.Time `json:"at"`
		Why  string    `json:"why"`
	}
	out := make([]flipJSON, 0, len(flips))
	for _, f := range flips {
		out = append(out, flipJSON{From: f.From.String(), To: f.To.String(), At: f.At, Why: f.Why})
	}
	return c.JSON(http.StatusOK, map[string]any{"flips": out})
}
