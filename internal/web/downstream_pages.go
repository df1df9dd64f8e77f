package web

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/fusebox/fusebox/internal/access"
	"github.com/fusebox/fusebox/internal/audit"
	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/config"
	"github.com/fusebox/fusebox/internal/downstream"
	"github.com/fusebox/fusebox/internal/spoken"
	"github.com/fusebox/fusebox/internal/views"
)

// Downstreams: a dependency many functions call, named once with its
// member circuits across a team's apps, tripped, tried and resumed as
// one (package downstream). The route's :id is the downstream's name.

// downstreamList shows the downstreams the caller's teams own, what
// failures propose, and the form for a new one.
func (s *DownstreamPages) downstreamList(c echo.Context) error {
	return s.renderDownstreams(c, http.StatusOK, views.DownstreamForm{Quorum: "2", ProbeGood: "3", ProbeEvery: "10s"})
}

func (s *DownstreamPages) renderDownstreams(c echo.Context, status int, form views.DownstreamForm) error {
	ctx := c.Request().Context()
	ds, err := s.Downstreams.List(ctx)
	if err != nil {
		return err
	}
	cs, err := s.Circuits.List(ctx)
	if err != nil {
		return err
	}
	owners, err := s.owners(c)
	if err != nil {
		return err
	}
	sc := scopeOf(c)
	state := map[string]circuit.Circuit{}
	for _, ci := range cs {
		state[ci.ID()] = ci
	}
	m := views.Downstreams{Page: s.page(c, "Downstreams", "downstreams"), CanCreate: sc.Creates()}
	for _, d := range ds {
		if !sc.SeesDownstream(d) {
			continue
		}
		off := 0
		for _, id := range d.Members {
			if state[id].State.TriggerOff() {
				off++
			}
		}
		m.Rows = append(m.Rows, views.DownstreamRow{Name: d.Name, Team: d.Team, State: d.State.String(), StateWord: d.State.Word(), Reason: d.Reason,
			Members: len(d.Members), Apps: len(d.Apps()), Off: off, Changed: d.ChangedAt})
	}
	if m.CanCreate {
		tc, err := s.teamChoice(c, form.Team.Value, "no team (admins')")
		if err != nil {
			return err
		}
		form.Team = tc
		m.Form = form
		proposer := downstream.Proposer{Failing: s.Breakers.Failing, Samples: s.Samples, Calls: s.Calls, Now: s.Now}
		for _, p := range proposer.Propose(ctx, sc.Circuits(owners, cs)) {
			m.Proposals = append(m.Proposals, views.DownstreamProposal{Host: p.Host, Members: p.Members, Apps: p.Apps, Calls: p.Calls})
		}
	}
	return render(c, status, views.DownstreamsPage(m))
}

// downstreamShow shows one downstream: its members, probe and actions.
func (s *DownstreamPages) downstreamShow(c echo.Context) error {
	d, err := s.downstreamOf(c)
	if err != nil {
		return err
	}
	return s.renderDownstream(c, http.StatusOK, d, formOf(d))
}

func (s *DownstreamPages) downstreamOf(c echo.Context) (downstream.Downstream, error) {
	d, err := s.Downstreams.Get(c.Request().Context(), c.Param("id"))
	if errors.Is(err, downstream.ErrNotFound) {
		return d, errNotYours
	}
	return d, err
}

func formOf(d downstream.Downstream) views.DownstreamForm {
	var rules []string
	for _, r := range d.Rules {
		if r.Action == downstream.ActionThrottle {
			rules = append(rules, "throttle:"+r.ID)
		} else {
			rules = append(rules, r.ID)
		}
	}
	f := views.DownstreamForm{Editing: true, Name: d.Name, Members: strings.Join(d.Members, "\n"), Quorum: strconv.Itoa(d.Quorum),
		Rules: strings.Join(rules, "\n"), ProbeURL: d.Probe.URL, Channels: strings.Join(d.Channels, ", "),
		Recipients: strings.Join(d.Recipients, ", "), Note: d.Note, PauseWindows: strings.Join(circuit.PauseWindowLines(d.PauseWindows), "\n")}
	if d.Probe.URL != "" {
		f.ProbeGood, f.ProbeEvery = strconv.Itoa(d.Probe.Good), d.Probe.Every.String()
	}
	return f
}

func (s *DownstreamPages) renderDownstream(c echo.Context, status int, d downstream.Downstream, form views.DownstreamForm) error {
	cs, err := s.Circuits.List(c.Request().Context())
	if err != nil {
		return err
	}
	state := map[string]circuit.Circuit{}
	for _, ci := range cs {
		state[ci.ID()] = ci
	}
	d = d.WithDefaults()
	m := views.Downstream{Page: s.page(c, "Downstream "+d.Name, "downstreams"), Name: d.Name, Team: d.Team, State: d.State.String(), StateWord: d.State.Word(),
		Reason: d.Reason, Actor: d.Actor, Episode: d.Episode, Changed: d.ChangedAt, Quorum: d.Quorum, Apps: len(d.Apps()),
		ProbeURL: d.Probe.URL, ProbeGood: d.Probe.Good, InARow: d.InARow, ProbeEvery: d.Probe.Every.String(),
		CanAct: scopeOf(c).Acts(d.Team), Form: form, PauseUntil: d.PauseUntil}
	if next, start, _, ok := circuit.NextOpening(d.PauseWindows, s.Now()); ok {
		m.NextPause = fmt.Sprintf("%s (%s)", start.UTC().Format("Mon 2 Jan 15:04 MST"), next)
		// What it does to each member's events: its own hub, its own history.
		for _, id := range d.Members {
			if ci, ok := state[id]; ok {
				if f, ok := forecastPause(c.Request().Context(), s.History, s.Now(), ci, next.Duration); ok {
					m.NextPauseForecasts = append(m.NextPauseForecasts, id+": "+f.Words())
					m.NextPauseExpires = m.NextPauseExpires || f.Expires
				}
			}
		}
	}
	for _, r := range d.Rules {
		m.Rules = append(m.Rules, r.Action+": "+r.ID)
	}
	for _, id := range d.Members {
		app, fn, _ := circuit.SplitID(id)
		ci, ok := state[id]
		mb := views.DownstreamMember{ID: id, App: app, Function: fn, Missing: !ok}
		if ok {
			mb.State, mb.Reason, mb.Marked = ci.State.String(), ci.Reason, ci.Downstream == d.Mark()
		}
		m.Members = append(m.Members, mb)
	}
	for _, a := range d.Answers {
		m.Answers = append(m.Answers, views.ProbeAnswer{At: a.At, Good: a.Good, Said: a.Said, Took: a.Took.Round(time.Millisecond).String()})
	}
	return render(c, status, views.DownstreamPage(m))
}

// downstreamInput reads the form.
func downstreamInput(c echo.Context) (downstream.Downstream, views.DownstreamForm, map[string]string) {
	v := func(k string) string { return strings.TrimSpace(c.FormValue(k)) }
	f := views.DownstreamForm{Name: v("name"), Members: v("members"), Quorum: v("quorum"), Rules: v("alert_rules"), ProbeURL: v("probe_url"),
		ProbeGood: v("probe_good"), ProbeEvery: v("probe_every"), Channels: v("channels"), Recipients: v("recipients"), Note: v("note"),
		PauseWindows: v("pause_windows")}
	f.Team.Value = v("team")
	problems := map[string]string{}
	d := downstream.Downstream{Name: f.Name, Team: f.Team.Value, Members: fields(f.Members), Channels: fields(f.Channels), Recipients: fields(f.Recipients), Note: f.Note,
		Probe: downstream.Probe{URL: f.ProbeURL}}
	if f.Quorum != "" {
		n, err := strconv.Atoi(f.Quorum)
		if err != nil {
			problems["quorum"] = "a whole number"
		}
		d.Quorum = n
	}
	var err error
	if d.PauseWindows, err = circuit.ParsePauseWindows(lines(f.PauseWindows)); err != nil {
		problems["pause_windows"] = err.Error()
	}
	for _, r := range fields(f.Rules) {
		id, action := circuit.RuleAction(r)
		d.Rules = append(d.Rules, downstream.Rule{ID: id, Action: action})
	}
	if f.ProbeURL != "" {
		if f.ProbeGood != "" {
			n, err := strconv.Atoi(f.ProbeGood)
			if err != nil {
				problems["probe_good"] = "a whole number"
			}
			d.Probe.Good = n
		}
		if f.ProbeEvery != "" {
			every, err := time.ParseDuration(f.ProbeEvery)
			if err != nil {
				problems["probe_every"] = "a duration such as 10s"
			}
			d.Probe.Every = every
		}
	}
	return d.WithDefaults(), f, problems
}

// fields splits on commas, spaces and lines.
func fields(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == '\n' || r == '\r' || r == ' ' || r == '\t' })
}

// checkDownstream says what is wrong with d as the caller would save it:
// its own settings, its team, and members that must be circuits of apps
// of its team the caller operates (anything else reads as no circuit,
// whoever's it is).
func (s *DownstreamPages) checkDownstream(c echo.Context, d downstream.Downstream, problems map[string]string, creating bool) (map[string]string, error) {
	ctx := c.Request().Context()
	var v downstream.ValidationError
	if err := d.Check(s.Config.Env == config.Development); errors.As(err, &v) {
		for k, msg := range v {
			if problems[k] == "" {
				problems[k] = msg
			}
		}
	}
	if creating {
		if problem := access.NameProblem(d.Team, d.Name); problem != "" && problems["name"] == "" {
			problems["name"] = problem
		}
		problem, err := s.placeIn(c, d.Team)
		if err != nil {
			return nil, err
		}
		if problem != "" {
			problems["team"] = problem
		}
	}
	sc := scopeOf(c)
	// The members' apps and circuits, read as lists once (the storage
	// keeps them), not a point read per member.
	apps, err := s.Apps.List(ctx)
	if err != nil {
		return nil, err
	}
	cs, err := s.Circuits.List(ctx)
	if err != nil {
		return nil, err
	}
	appByID := make(map[string]circuit.App, len(apps))
	for _, a := range apps {
		appByID[a.ID] = a
	}
	circuitByID := make(map[string]circuit.Circuit, len(cs))
	for _, ci := range cs {
		circuitByID[ci.ID()] = ci
	}
	for _, id := range d.Members {
		app, _, ok := circuit.SplitID(id)
		if !ok || problems["members"] != "" {
			break
		}
		a, found := appByID[app]
		if !found || !sc.AddsMember(d.Team, a) {
			problems["members"] = fmt.Sprintf("%s is not a circuit of an app of %s you operate", id, orWord(d.Team, "your teams"))
			break
		}
		ci, found := circuitByID[id]
		if !found {
			problems["members"] = fmt.Sprintf("%s is not a circuit: make it first on the Circuits page", id)
			break
		}
		set := ci.Settings
		set.PauseWindows = d.PauseWindows
		if p, ok := circuit.ExpiringPause(set); ok && s.Config.PauseExpiry == "refuse" && problems["pause_windows"] == "" {
			problems["pause_windows"] = fmt.Sprintf("%s is as long as %s's hub keeps events (%s) or longer: the events waiting when it opens would be gone before it ends (pauses that would lose events are refused here)", p, id, spoken.Duration(ci.HubRetention))
		}
	}
	if problems["channels"] == "" && len(d.Channels) > 0 {
		var ve circuit.ValidationError
		if err := s.KnownChannels.Check(ctx, d.Channels); errors.As(err, &ve) {
			problems["channels"] = ve.Error()
		} else if err != nil {
			return nil, err
		}
	}
	for _, r := range d.Recipients {
		if !strings.Contains(r, "@") || len(r) > 254 {
			problems["recipients"] = fmt.Sprintf("%q is not a mail address", clipText(r, 80))
			break
		}
	}
	return problems, nil
}

func orWord(s, none string) string {
	if s == "" {
		return none
	}
	return s
}

func clipText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// downstreamCreate names a new downstream.
func (s *DownstreamPages) downstreamCreate(c echo.Context) error {
	d, form, problems := downstreamInput(c)
	if d.Team == "" && !teamNamed(c, d.Team) {
		d.Team = scopeOf(c).DefaultTeam()
		form.Team.Value = d.Team
	}
	d.Name = nameOf(c, d)
	problems, err := s.checkDownstream(c, d, problems, true)
	if err != nil {
		return err
	}
	if len(problems) == 0 {
		_, err = s.Downstreams.Create(c.Request().Context(), d)
		if errors.Is(err, downstream.ErrConflict) {
			problems["name"] = "is taken: choose another name"
		} else if err != nil {
			return err
		}
	}
	if len(problems) > 0 {
		form.Errors = problems
		return s.renderDownstreams(c, http.StatusUnprocessableEntity, form)
	}
	if err := s.record(c, "created downstream", d.Name, strings.Join(d.Members, ", ")); err != nil {
		return err
	}
	s.setFlash(c, "downstream-saved")
	return c.Redirect(http.StatusSeeOther, "/downstreams/"+d.Name)
}

// nameOf is the name a new downstream gets: a team's operator names it
// in the team's own names (access.Scope.Name). A name whose dot names
// another team is left as given, to be refused.
func nameOf(c echo.Context, d downstream.Downstream) string {
	if access.NameProblem(d.Team, d.Name) != "" {
		return d.Name
	}
	return scopeOf(c).Name(d.Team, d.Name)
}

// recordDeleted appends the audit entry of a downstream deleted: gone by
// the time it is written, its team is said here.
func (s *DownstreamPages) recordDeleted(c echo.Context, d downstream.Downstream) error {
	return s.Audit.Append(c.Request().Context(), audit.Entry{At: s.Now(), Actor: actorOf(c), Action: "deleted downstream", Target: "downstream:" + d.Name, Team: d.Team, Owned: true})
}

// record appends an audit entry of a change to a downstream.
func (s *DownstreamPages) record(c echo.Context, action, name, detail string) error {
	return s.Audit.Append(c.Request().Context(), audit.Entry{At: s.Now(), Actor: actorOf(c), Action: action, Target: "downstream:" + name, Detail: detail})
}

// actorOf is who the request is, as flip logs and the audit name them.
func actorOf(c echo.Context) string {
	p, _ := principal(c)
	return p.Name
}

// downstreamUpdate changes a downstream's settings, keeping its state.
func (s *DownstreamPages) downstreamUpdate(c echo.Context) error {
	cur, err := s.downstreamOf(c)
	if err != nil {
		return err
	}
	d, form, problems := downstreamInput(c)
	d.Name, d.Team = cur.Name, cur.Team
	form.Editing, form.Name = true, cur.Name
	problems, err = s.checkDownstream(c, d, problems, false)
	if err != nil {
		return err
	}
	if len(problems) == 0 {
		if _, err := s.Downstreams.Update(c.Request().Context(), cur.Settled(d)); errors.Is(err, downstream.ErrConflict) {
			problems["name"] = "it changed while you edited it: look at it again"
		} else if err != nil {
			return err
		}
	}
	if len(problems) > 0 {
		form.Errors = problems
		return s.renderDownstream(c, http.StatusUnprocessableEntity, cur, form)
	}
	if err := s.record(c, "changed downstream", d.Name, strings.Join(d.Members, ", ")); err != nil {
		return err
	}
	s.setFlash(c, "downstream-saved")
	return c.Redirect(http.StatusSeeOther, "/downstreams/"+d.Name)
}

// downstreamDelete forgets a downstream; its members keep their circuits.
func (s *DownstreamPages) downstreamDelete(c echo.Context) error {
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
	s.setFlash(c, "downstream-deleted")
	return c.Redirect(http.StatusSeeOther, "/downstreams")
}

// downstreamAction trips, tries or resumes every member.
func (s *DownstreamPages) downstreamAction(verb string) echo.HandlerFunc {
	return func(c echo.Context) error {
		d, err := s.downstreamOf(c)
		if err != nil {
			return err
		}
		reason := strings.TrimSpace(c.FormValue("reason"))
		_, out, err := s.actOnDownstream(c, d, verb, reason)
		if err != nil {
			return err
		}
		if msg := outcomeProblem(out); msg != "" {
			return echo.NewHTTPError(http.StatusConflict, msg)
		}
		s.setFlash(c, "downstream-"+map[string]string{"trip": "tripped", "try": "tried", "resume": "resumed"}[verb])
		return c.Redirect(http.StatusSeeOther, "/downstreams/"+d.Name)
	}
}

// actOnDownstream is one action, for the page and the API: a refusal of
// the state (tripping what is off) is a 409 that says so.
func (s *DownstreamPages) actOnDownstream(c echo.Context, d downstream.Downstream, verb, reason string) (downstream.Downstream, []downstream.Outcome, error) {
	ctx, actor := c.Request().Context(), actorOf(c)
	if verb != "try" {
		if msg := audit.CheckReason(reason, "every member's flip log"); msg != "" {
			return d, nil, echo.NewHTTPError(http.StatusUnprocessableEntity, msg)
		}
	}
	var next downstream.Downstream
	var out []downstream.Outcome
	var err error
	switch verb {
	case "trip":
		next, out, err = s.Keeper.Trip(ctx, d.Name, actor, reason)
	case "try":
		next, out, err = s.Keeper.Resolved(ctx, d.Name, actor, "said fixed by "+actor)
	default:
		next, out, err = s.Keeper.Resume(ctx, d.Name, actor, reason)
	}
	switch {
	case errors.Is(err, downstream.ErrAlreadyOff):
		return d, nil, echo.NewHTTPError(http.StatusConflict, "Its members are already off.")
	case errors.Is(err, downstream.ErrNotOff):
		return d, nil, echo.NewHTTPError(http.StatusConflict, "Its members are not off: there is nothing to try or resume.")
	case errors.Is(err, downstream.ErrNotFound):
		return d, nil, errNotYours
	}
	return next, out, err
}

// outcomeProblem says which members an action could not change, in the
// service's words for circuits (never a remote server's).
func outcomeProblem(out []downstream.Outcome) string {
	var bad []string
	for _, o := range out {
		if o.Err != nil {
			bad = append(bad, o.Member)
		}
	}
	if len(bad) == 0 {
		return ""
	}
	return "The downstream changed, but these members could not be: " + strings.Join(bad, ", ") + ". Look at each on its page."
}
