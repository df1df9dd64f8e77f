package web

import (
	"errors"
	"net/http"
	"net/url"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/views"
)

// stormShow lists the open circuits (of one app, all picked, when the
// query names it: the storm case) to resume or acknowledge in one action.
func (s *CircuitPages) stormShow(c echo.Context) error {
	ctx := c.Request().Context()
	apps, err := s.Apps.List(ctx)
	if err != nil {
		return err
	}
	all, err := s.Circuits.List(ctx)
	if err != nil {
		return err
	}
	app := c.QueryParam("app")
	m := views.Storm{Page: s.page(c, "Resume several circuits", "circuits"), App: app}
	if app != "" {
		m.AppName = appName(apps, app)
	}
	for _, ci := range all {
		if !ci.State.TriggerOff() || (app != "" && ci.AppID != app) {
			continue
		}
		m.Rows = append(m.Rows, views.StormRow{ID: ci.ID(), App: appName(apps, ci.AppID), Function: ci.Function, State: ci.State.String(),
			Tone: stateTone(ci.State), Reason: ci.Reason, Checked: app != ""})
	}
	return render(c, http.StatusOK, views.StormPage(m))
}

// stormSubmit resumes (or acknowledges) the picked circuits with one
// reason, and says what happened to each.
func (s *CircuitPages) stormSubmit(c echo.Context) error {
	form, err := c.FormParams()
	if err != nil {
		return echo.NewHTTPError(http.StatusBadRequest, "The form could not be read.")
	}
	ids, reason, acknowledge := form["circuit"], strings.TrimSpace(c.FormValue("reason")), c.FormValue("action") == "acknowledge"
	if msg := circuit.CheckStorm(ids, reason, acknowledge); msg != "" {
		return echo.NewHTTPError(http.StatusUnprocessableEntity, msg)
	}
	p, _ := principal(c)
	m := views.Storm{Page: s.page(c, "Resumed", "circuits"), Action: "resume"}
	if acknowledge {
		m.Action = "acknowledge"
	}
	for _, o := range s.Switch.ResumeEach(c.Request().Context(), ids, p.Name, reason, acknowledge) {
		r := views.StormResult{ID: o.ID, Href: "/circuits", State: o.Circuit.State.String(), Tone: stateTone(o.Circuit.State), Error: stormError(o.Err)}
		if app, fn, ok := circuit.SplitID(o.ID); ok {
			r.Href = "/circuits/" + url.PathEscape(app) + "/" + url.PathEscape(fn)
		}
		if o.Err != nil {
			r.State, r.Tone = "unchanged", "muted"
		}
		m.Results = append(m.Results, r)
	}
	return render(c, http.StatusOK, views.StormPage(m))
}

// stormError says why one circuit was not changed, in Fusebox's words:
// the domain's reasons as they are, anything else (storage) as a class.
func stormError(err error) string {
	switch {
	case err == nil:
		return ""
	case errors.Is(err, circuit.ErrNotFound):
		return "there is no such circuit"
	case errors.Is(err, circuit.ErrNotOpen), errors.Is(err, circuit.ErrNothingToAcknowledge), errors.Is(err, circuit.ErrConflictRetries), errors.Is(err, circuit.ErrNotAnID):
		return strings.TrimPrefix(err.Error(), "circuit: ")
	}
	return "Fusebox could not change it now; try again"
}

// apiCircuitsResume is stormSubmit for the API.
func (s *CircuitPages) apiCircuitsResume(c echo.Context) error {
	var body struct {
		Circuits    []string `json:"circuits"`
		Reason      string   `json:"reason"`
		Acknowledge bool     `json:"acknowledge"`
	}
	if err := c.Bind(&body); err != nil {
		return echo.NewHTTPError(http.StatusBadRequest, `The body must be JSON: {"circuits": ["app/function", ...], "reason": "..."}.`)
	}
	body.Reason = strings.TrimSpace(body.Reason)
	if msg := circuit.CheckStorm(body.Circuits, body.Reason, body.Acknowledge); msg != "" {
		return c.JSON(http.StatusUnprocessableEntity, map[string]string{"error": msg})
	}
	p, _ := principal(c)
	type result struct {
		Circuit string `json:"circuit"`
		State   string `json:"state"`
		Episode int64  `json:"episode"`
		Error   string `json:"error,omitempty"`
	}
	out := struct {
		Results []result `json:"results"`
	}{Results: []result{}}
	for _, o := range s.Switch.ResumeEach(c.Request().Context(), body.Circuits, p.Name, body.Reason, body.Acknowledge) {
		r := result{Circuit: o.ID, State: o.Circuit.State.String(), Episode: o.Circuit.Episode, Error: stormError(o.Err)}
		if o.Err != nil {
			r.State, r.Episode = "", 0
		}
		out.Results = append(out.Results, r)
	}
	return c.JSON(http.StatusOK, out)
}
