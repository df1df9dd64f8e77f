package web

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/fusebox/fusebox/internal/access"
	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/replay"
	"github.com/fusebox/fusebox/internal/views"
)

// stormShow lists the open circuits (of one app, all picked, when the
// query names it: the storm case) to resume or acknowledge in one action.
func (s *SwitchPages) stormShow(c echo.Context) error {
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
	apps = scopeOf(c).Operated(apps)
	if app != "" {
		m.AppName = appName(apps, app)
	}
	owners := access.TeamOf(apps)
	for _, ci := range all {
		if _, mine := owners[ci.AppID]; !mine || !ci.State.TriggerOff() || (app != "" && ci.AppID != app) {
			continue
		}
		m.Rows = append(m.Rows, views.StormRow{ID: ci.ID(), App: appName(apps, ci.AppID), Function: ci.Function, State: ci.State.String(),
			Tone: stateTone(ci.State), Reason: ci.Reason, Checked: app != ""})
	}
	return render(c, http.StatusOK, views.StormPage(m))
}

// stormSubmit resumes (or acknowledges) the picked circuits with one
// reason, and says what happened to each.
func (s *SwitchPages) stormSubmit(c echo.Context) error {
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
	for _, o := range s.resumeEach(c.Request().Context(), ids, p.Name, reason, acknowledge, c.FormValue("from")) {
		r := views.StormResult{ID: o.ID, Href: "/circuits", State: o.Circuit.State.String(), Tone: stateTone(o.Circuit.State), Error: stormError(o.Err), Replayed: o.replayed}
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
	case errors.As(err, new(replay.ErrNotReady)):
		return "not resumed from before its first failure: " + replay.Words(err)
	}
	return "Fusebox could not change it now; try again"
}

// apiCircuitsResume is stormSubmit for the API.
func (s *SwitchPages) apiCircuitsResume(c echo.Context) error {
	var body struct {
		Circuits    []string `json:"circuits"`
		Reason      string   `json:"reason"`
		Acknowledge bool     `json:"acknowledge"`
		From        string   `json:"from"`
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
		// Replayed says what a resume from before the first failure
		// replayed.
		Replayed string `json:"replayed,omitempty"`
	}
	out := struct {
		Results []result `json:"results"`
	}{Results: []result{}}
	for _, o := range s.resumeEach(c.Request().Context(), body.Circuits, p.Name, body.Reason, body.Acknowledge, body.From) {
		r := result{Circuit: o.ID, State: o.Circuit.State.String(), Episode: o.Circuit.Episode, Error: stormError(o.Err), Replayed: o.replayed}
		if o.Err != nil {
			r.State, r.Episode = "", 0
		}
		out.Results = append(out.Results, r)
	}
	return c.JSON(http.StatusOK, out)
}

// stormOutcome is what a storm action did to one circuit, and what a
// resume from before the first failure replayed.
type stormOutcome struct {
	circuit.StormOutcome
	replayed string
}

// resumeEach is the domain's ResumeEach, but for the Event Hubs circuits
// Fusebox replays when from asks: those are resumed from before their
// first failure, one after another, each on its own.
func (s *SwitchPages) resumeEach(ctx context.Context, ids []string, actor, reason string, acknowledge bool, from string) []stormOutcome {
	// Named twice is named once, before anything tells yours from
	// another team's: otherwise the count of answers tells them apart.
	ids = dedupe(ids)
	var plain []string
	var out []stormOutcome
	apps, err := s.Apps.List(ctx)
	if err != nil {
		for _, id := range ids {
			out = append(out, stormOutcome{StormOutcome: circuit.StormOutcome{ID: id, Err: err}})
		}
		return out
	}
	owned := map[string]circuit.App{}
	for _, a := range apps {
		owned[a.ID] = a
	}
	for _, id := range ids {
		app, fn, ok := circuit.SplitID(id)
		if a, listed := owned[app]; ok && listed && !access.AppActed(ctx, a) {
			// Another team's reads as no such circuit, and is left alone.
			out = append(out, stormOutcome{StormOutcome: circuit.StormOutcome{ID: id, Err: circuit.ErrNotFound}})
			continue
		}
		if acknowledge || from != circuit.ResumeFromFirstFailure || s.Replay == nil || !ok || slices.ContainsFunc(out, func(o stormOutcome) bool { return o.ID == id }) {
			plain = append(plain, id)
			continue
		}
		ci, err := s.Circuits.Get(ctx, app, fn)
		if err != nil || ci.Consumes().Hub == "" {
			plain = append(plain, id)
			continue
		}
		if a, err := s.Apps.Get(ctx, app); err != nil || a.HostStorage == "" {
			plain = append(plain, id)
			continue
		}
		o := stormOutcome{StormOutcome: circuit.StormOutcome{ID: id}}
		var rec replay.Record
		o.Circuit, rec, o.Err = s.Replay.Resume(ctx, app, fn, actor, reason, nil)
		if o.Err == nil {
			o.replayed = rec.Summary()
		}
		out = append(out, o)
	}
	for _, o := range s.Breakers.ResumeEach(ctx, plain, actor, reason, acknowledge) {
		out = append(out, stormOutcome{StormOutcome: o})
	}
	// In the order they were picked.
	order := map[string]int{}
	for i, id := range ids {
		if _, ok := order[id]; !ok {
			order[id] = i
		}
	}
	slices.SortStableFunc(out, func(a, b stormOutcome) int { return order[a.ID] - order[b.ID] })
	return out
}

// dedupe keeps the first of each id, in order.
func dedupe(ids []string) []string {
	seen := make(map[string]bool, len(ids))
	out := make([]string, 0, len(ids))
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out
}
