package web

import (
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/fusebox/fusebox/internal/apiwire"
	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/downstream"
)

// The downstreams' API: list, show, put (create or change), delete, and
// trip or resume every member. A downstream of another team answers 404.

func downstreamWire(d downstream.Downstream) apiwire.Downstream {
	d = d.WithDefaults()
	w := apiwire.Downstream{Name: d.Name, Team: d.Team, Members: orEmpty(d.Members), Quorum: d.Quorum, AlertRules: []apiwire.DownstreamRule{},
		Channels: orEmpty(d.Channels), Recipients: orEmpty(d.Recipients), Note: d.Note, State: d.State.Word(), Episode: d.Episode,
		Reason: d.Reason, Actor: d.Actor, InARow: d.InARow, Answers: []apiwire.ProbeAnswer{}, PauseWindows: orEmpty(circuit.PauseWindowLines(d.PauseWindows))}
	if !d.PauseUntil.IsZero() {
		until := d.PauseUntil.UTC()
		w.PauseUntil = &until
	}
	for _, r := range d.Rules {
		w.AlertRules = append(w.AlertRules, apiwire.DownstreamRule{ID: r.ID, Action: r.Action})
	}
	if d.Probe.URL != "" {
		w.Probe = &apiwire.DownstreamProbe{URL: d.Probe.URL, Good: d.Probe.Good, EverySeconds: int(d.Probe.Every / time.Second)}
	}
	if !d.ChangedAt.IsZero() {
		at := d.ChangedAt.UTC()
		w.ChangedAt = &at
	}
	for _, a := range d.Answers {
		w.Answers = append(w.Answers, apiwire.ProbeAnswer{At: a.At.UTC(), Good: a.Good, Said: a.Said, TookMS: a.Took.Milliseconds()})
	}
	return w
}

func orEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// apiDownstreamList lists the downstreams the caller sees.
func (s *DownstreamPages) apiDownstreamList(c echo.Context) error {
	ds, err := s.Downstreams.List(c.Request().Context())
	if err != nil {
		return err
	}
	sc := scopeOf(c)
	out := []apiwire.Downstream{}
	for _, d := range ds {
		if sc.SeesDownstream(d) {
			out = append(out, downstreamWire(d))
		}
	}
	return c.JSON(http.StatusOK, map[string]any{"downstreams": out})
}

// apiDownstreamShow answers one downstream.
func (s *DownstreamPages) apiDownstreamShow(c echo.Context) error {
	d, err := s.downstreamOf(c)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, downstreamWire(d))
}

// apiDownstreamCreate names a new downstream (its name in the body).
func (s *DownstreamPages) apiDownstreamCreate(c echo.Context) error {
	return s.apiDownstreamSave(c, "")
}

// apiDownstreamPut changes a downstream's settings; its team and state
// stay.
func (s *DownstreamPages) apiDownstreamPut(c echo.Context) error {
	return s.apiDownstreamSave(c, c.Param("id"))
}

func (s *DownstreamPages) apiDownstreamSave(c echo.Context, name string) error {
	var in apiwire.Downstream
	if err := c.Bind(&in); err != nil {
		return echo.NewHTTPError(http.StatusBadRequest, `The body must be JSON such as {"name": "inventory-db", "members": ["orders/ProcessOrders", "shipping/ReserveStock"], "quorum": 2}.`)
	}
	creating := name == ""
	if creating {
		name = strings.TrimSpace(in.Name)
	}
	d := downstream.Downstream{Name: name, Team: strings.TrimSpace(in.Team), Members: in.Members, Quorum: in.Quorum, Channels: in.Channels, Recipients: in.Recipients, Note: in.Note}
	for _, r := range in.AlertRules {
		d.Rules = append(d.Rules, downstream.Rule{ID: r.ID, Action: r.Action})
	}
	windows, werr := circuit.ParsePauseWindows(in.PauseWindows)
	d.PauseWindows = windows
	if in.Probe != nil {
		d.Probe = downstream.Probe{URL: in.Probe.URL, Good: in.Probe.Good, Every: time.Duration(in.Probe.EverySeconds) * time.Second}
	}
	d = d.WithDefaults()
	ctx := c.Request().Context()
	var cur downstream.Downstream
	if creating {
		if d.Team == "" {
			d.Team = scopeOf(c).DefaultTeam()
		}
		d.Name = nameOf(c, d)
	} else {
		var err error
		if cur, err = s.downstreamOf(c); err != nil {
			return err
		}
		d.Team = cur.Team
	}
	problems := map[string]string{}
	if werr != nil {
		problems["pause_windows"] = werr.Error()
	}
	problems, err := s.checkDownstream(c, d, problems, creating)
	if err != nil {
		return err
	}
	if len(problems) > 0 {
		return c.JSON(http.StatusUnprocessableEntity, map[string]any{"error": "the downstream's settings are not valid", "fields": problems})
	}
	status := http.StatusOK
	if creating {
		if d, err = s.Downstreams.Create(ctx, d); errors.Is(err, downstream.ErrConflict) {
			return echo.NewHTTPError(http.StatusConflict, "That name is taken: choose another.")
		}
		status = http.StatusCreated
	} else {
		if d, err = s.Downstreams.Update(ctx, cur.Settled(d)); errors.Is(err, downstream.ErrConflict) {
			return echo.NewHTTPError(http.StatusConflict, "It changed meanwhile: read it again.")
		}
	}
	if err != nil {
		return err
	}
	if err := s.record(c, map[bool]string{true: "created downstream", false: "changed downstream"}[creating], d.Name, strings.Join(d.Members, ", ")); err != nil {
		return err
	}
	return c.JSON(status, downstreamWire(d))
}

// apiDownstreamDelete forgets a downstream.
func (s *DownstreamPages) apiDownstreamDelete(c echo.Context) error {
	d, err := s.downstreamOf(c)
	if err != nil {
		return err
	}
	if err := s.Downstreams.Delete(c.Request().Context(), d.Name); err != nil && !errors.Is(err, downstream.ErrNotFound) {
		return err
	}
	if err := s.recordDeleted(c, d); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// apiDownstreamAction trips or resumes every member.
func (s *DownstreamPages) apiDownstreamAction(verb string) echo.HandlerFunc {
	return func(c echo.Context) error {
		d, err := s.downstreamOf(c)
		if err != nil {
			return err
		}
		var in apiwire.DownstreamAction
		if c.Request().ContentLength != 0 {
			if err := c.Bind(&in); err != nil {
				return echo.NewHTTPError(http.StatusBadRequest, `The body must be JSON such as {"reason": "inventory-db failing over"}.`)
			}
		}
		next, out, err := s.actOnDownstream(c, d, verb, in.Reason)
		if err != nil {
			return err
		}
		res := apiwire.DownstreamActed{Downstream: downstreamWire(next), Members: []apiwire.MemberActed{}}
		for _, o := range out {
			m := apiwire.MemberActed{Circuit: o.Member, Changed: o.Err == nil}
			if o.Err != nil {
				m.Problem = memberProblem(o.Err)
			}
			res.Members = append(res.Members, m)
		}
		return c.JSON(http.StatusOK, res)
	}
}

// memberProblem says why a member could not be changed, in Fusebox's
// words: a remote server's never reach an answer.
func memberProblem(err error) string {
	switch {
	case errors.Is(err, downstream.ErrLeftTeam):
		return "its app is of another team now: skipped (an admin may move it back, or remove it from the downstream)"
	case errors.Is(err, circuit.ErrNotFound):
		return "it is not a circuit any more"
	case errors.Is(err, circuit.ErrConflictRetries):
		return "it kept changing; try again"
	}
	return "storage did not answer as expected; try again"
}
