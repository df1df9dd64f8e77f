package web

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/fusebox/fusebox/internal/apiwire"
	"github.com/fusebox/fusebox/internal/audit"
	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/jobs"
	"github.com/fusebox/fusebox/internal/spoken"
	"github.com/fusebox/fusebox/internal/views"
)

// jobNew shows the form for a new job.
func (s *JobPages) jobNew(c echo.Context) error {
	return s.renderJobForm(c, http.StatusOK, views.JobForm{Schedule: "0 0 1 * * *", TimeZone: "UTC", Grace: "5m"}, "")
}

// jobEdit shows a job's settings.
func (s *JobPages) jobEdit(c echo.Context) error {
	j, err := s.jobOf(c)
	if err != nil {
		return err
	}
	m := views.JobForm{Editing: true, Name: j.Name, Slug: j.Slug, App: j.AppID, Function: j.Function, Schedule: j.Schedule,
		TimeZone: j.TimeZone, Grace: spoken.Duration(j.Grace), Recipients: strings.Join(j.Recipients, ", "), Channels: strings.Join(j.Channels, ", "), Tags: strings.Join(j.Tags, ", "), Misfire: j.Misfire, Paused: j.Paused,
		Team: views.TeamChoice{Value: j.Team}}
	if j.MaxDuration > 0 {
		m.MaxDuration = spoken.Duration(j.MaxDuration)
	}
	if j.MinDuration > 0 {
		m.MinDuration = spoken.Duration(j.MinDuration)
	}
	if j.FailAfter > 1 {
		m.FailAfter = strconv.Itoa(j.FailAfter)
	}
	if j.RecoverAfter > 1 {
		m.RecoverAfter = strconv.Itoa(j.RecoverAfter)
	}
	m.Rules = j.Rules()
	return s.renderJobForm(c, http.StatusOK, m, j.ID)
}

// jobSave creates or updates a job, or only previews its next runs.
func (s *JobPages) jobSave(c echo.Context) error {
	id := c.Param("id")
	var existing jobs.Job
	if id != "" {
		j, err := s.jobOf(c)
		if err != nil {
			return err
		}
		existing = j
	}
	v := func(k string) string { return strings.TrimSpace(c.FormValue(k)) }
	m := views.JobForm{Editing: id != "", Name: v("name"), Slug: v("slug"), App: v("app"), Function: v("function"), Schedule: v("schedule"),
		TimeZone: v("time_zone"), Grace: v("grace"), MaxDuration: v("max_duration"), Recipients: v("recipients"), Channels: v("channels"), Paused: c.FormValue("paused") == "on",
		MinDuration: v("min_duration"), FailAfter: v("fail_after"), RecoverAfter: v("recover_after"), Tags: v("tags"), Misfire: v("misfire"),
		Team: views.TeamChoice{Value: v("team")}}
	in := apiwire.JobInput{Name: m.Name, Slug: m.Slug, App: m.App, Function: m.Function, Schedule: m.Schedule, TimeZone: m.TimeZone,
		Grace: m.Grace, MaxDuration: m.MaxDuration, Paused: m.Paused, Recipients: splitComma(m.Recipients), Channels: splitComma(m.Channels),
		MinDuration: m.MinDuration, Tags: splitComma(strings.ToLower(m.Tags)), Misfire: m.Misfire, Team: m.Team.Value}
	for field, dst := range map[string]**int{"fail_after": &in.FailAfter, "recover_after": &in.RecoverAfter} {
		if raw := v(field); raw != "" {
			n, err := strconv.Atoi(raw)
			if err != nil {
				n = -1 // refused below with the field's message
			}
			*dst = &n
		}
	}
	var ex *jobs.Job
	if id != "" {
		ex = &existing
	}
	j, problems := s.buildJob(c, ex, in)
	if len(problems) > 0 {
		m.Errors = problems
		return s.renderJobForm(c, http.StatusUnprocessableEntity, m, id)
	}
	if c.FormValue("do") == "preview" {
		m.Rules = j.Rules()
		m.Preview, _ = j.NextRuns(s.Now(), 5)
		if loc, err := jobs.LoadZone(j.TimeZone); err == nil {
			for i := range m.Preview {
				m.Preview[i] = m.Preview[i].In(loc)
			}
		}
		return s.renderJobForm(c, http.StatusOK, m, id)
	}
	s.unknownPings.clear() // its id or slug may have been pinged before it existed
	if problems, err := s.saveJob(c, j, id == ""); err != nil {
		return err
	} else if len(problems) > 0 {
		m.Errors = problems
		return s.renderJobForm(c, http.StatusUnprocessableEntity, m, id)
	}
	p, _ := principal(c)
	action := "created job"
	if id != "" {
		action = "changed job"
	}
	ctx, cancel := detached(c)
	defer cancel()
	if err := s.Audit.Append(ctx, audit.Entry{At: s.Now(), Actor: p.Name, Action: action, Target: j.Name, Job: j.ID, Detail: j.Schedule + " " + j.TimeZone}); err != nil {
		return err
	}
	s.setFlash(c, "saved")
	return c.Redirect(http.StatusSeeOther, "/jobs/"+j.ID)
}

// buildJob applies input to an existing job (or a new one) and checks it,
// returning a message per field that is wrong.
func (s *JobPages) buildJob(c echo.Context, existing *jobs.Job, in apiwire.JobInput) (jobs.Job, map[string]string) {
	j := jobs.Fresh(s.Now())
	if existing != nil {
		j = *existing
	}
	j.Name, j.Slug, j.AppID, j.Function, j.Schedule, j.TimeZone, j.Paused = in.Name, in.Slug, in.App, in.Function, in.Schedule, in.TimeZone, in.Paused
	j.Recipients, j.Channels, j.Tags, j.Misfire = in.Recipients, in.Channels, in.Tags, in.Misfire
	problems := map[string]string{}
	var err error
	if j.Grace, err = optionalDuration(in.Grace); err != nil {
		problems["grace"] = "must be a duration such as 5m"
	}
	if j.MaxDuration, err = optionalDuration(in.MaxDuration); err != nil {
		problems["max_duration"] = "must be a duration such as 30m, or empty"
	}
	if j.MinDuration, err = optionalDuration(in.MinDuration); err != nil {
		problems["min_duration"] = "must be a duration such as 30s, or empty"
	}
	for field, p := range map[string]struct {
		in  *int
		out *int
	}{"fail_after": {in.FailAfter, &j.FailAfter}, "recover_after": {in.RecoverAfter, &j.RecoverAfter}} {
		if p.in == nil {
			continue
		}
		if *p.in < 1 || *p.in > 100 {
			problems[field] = "must be a whole number from 1 to 100"
			continue
		}
		*p.out = *p.in
	}
	var ve jobs.ValidationError
	if err := j.Validate(); errors.As(err, &ve) {
		for _, f := range ve {
			if _, seen := problems[f.Field]; !seen {
				problems[f.Field] = f.Message
			}
		}
	}
	if j.AppID != "" && problems["app"] == "" {
		// Another team's app reads as one that does not exist.
		if a, err := s.Apps.Get(c.Request().Context(), j.AppID); errors.Is(err, circuit.ErrNoApp) || (err == nil && !scopeOf(c).Acts(a.Team)) {
			problems["app"] = "there is no such function app"
		}
	}
	switch {
	case j.AppID != "":
		j.Team = "" // it follows its app's
	case teamNamed(c, in.Team):
		j.Team = in.Team
	case existing == nil:
		j.Team = scopeOf(c).DefaultTeam()
	}
	if j.AppID == "" && (existing == nil || existing.Team != j.Team || existing.AppID != "") {
		if problem, err := s.placeIn(c, j.Team); err != nil {
			problems["team"] = "the teams could not be read now"
		} else if problem != "" {
			problems["team"] = problem
		}
	}
	return j, withChannelProblems(c, s.KnownChannels, j.Channels, problems)
}

// saveJob saves j through the catalog, which keeps the jobs' rules (one
// job per slug); what breaks them comes back as problems per field.
func (s *JobPages) saveJob(c echo.Context, j jobs.Job, create bool) (map[string]string, error) {
	save := s.Catalog.Update
	if create {
		save = s.Catalog.Create
	}
	err := save(c.Request().Context(), j)
	var ve jobs.ValidationError
	if errors.As(err, &ve) {
		problems := map[string]string{}
		for _, f := range ve {
			problems[f.Field] = f.Message
		}
		return problems, nil
	}
	return nil, err
}

func optionalDuration(s string) (time.Duration, error) {
	if s == "" {
		return 0, nil
	}
	return time.ParseDuration(s)
}

func (s *JobPages) jobOf(c echo.Context) (jobs.Job, error) {
	j, err := s.Jobs.Get(c.Request().Context(), c.Param("id"))
	if errors.Is(err, jobs.ErrNoJob) {
		return j, echo.NewHTTPError(http.StatusNotFound, "There is no such job.")
	}
	return j, err
}

func (s *JobPages) renderJobForm(c echo.Context, status int, m views.JobForm, id string) error {
	apps, err := s.Apps.List(c.Request().Context())
	if err != nil {
		return err
	}
	for _, a := range scopeOf(c).Operated(apps) {
		m.Apps = append(m.Apps, views.Option{Value: a.ID, Label: appName(apps, a.ID)})
	}
	if m.Team, err = s.teamChoice(c, m.Team.Value, "admins' alone"); err != nil {
		return err
	}
	if id == "" {
		m.Page, m.Action, m.Cancel = s.page(c, "New job", "jobs"), "/jobs/new", "/jobs"
	} else {
		m.Page, m.Action, m.Cancel = s.page(c, "Settings of "+m.Name, "jobs"), "/jobs/"+id+"/edit", "/jobs/"+id
	}
	return render(c, status, views.JobFormPage(m))
}
