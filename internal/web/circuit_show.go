package web

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/fusebox/fusebox/internal/access"
	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/episode"
	"github.com/fusebox/fusebox/internal/errortexts"
	"github.com/fusebox/fusebox/internal/spoken"
	"github.com/fusebox/fusebox/internal/throttle"
	"github.com/fusebox/fusebox/internal/views"
)

// circuitShow is one circuit's page: its count now, settings, drift and
// flip log, with trip and resume for operators.
func (s *CircuitPages) circuitShow(c echo.Context) error {
	ctx := c.Request().Context()
	ci, err := s.circuitOf(c)
	if err != nil {
		return err
	}
	flips, err := s.Circuits.Flips(ctx, ci.AppID, ci.Function, 50)
	if err != nil {
		return err
	}
	apps, err := s.Apps.List(ctx)
	if err != nil {
		return err
	}
	now := s.Now()
	day, err := s.Rates.Of(ctx, ci.AppID, ci.Function, now.Add(-24*time.Hour))
	if err != nil {
		return err
	}
	// The roll-up keeps whole minutes, up to two behind: the minutes since
	// come from the circuit's own rows, or a burst just counted shows 0.
	// Both come from one read of the page's own window reader, which
	// reads only what changed since its last read: a separate read of the
	// circuit's rows cost every view every row of those minutes.
	recentFrom := rolledUpTo(now)
	from := now.Add(-ci.Window).Truncate(time.Second)
	if recentFrom.Before(from) {
		from = recentFrom
	}
	rows, _, err := s.Window.Window(ctx, from, now)
	if err != nil {
		return err
	}
	// The count is of the same rows, not of a second read.
	counts := circuit.CountRows(rows, []circuit.Circuit{ci}, now)
	p, _ := principal(c)
	// The page's app is the listing's: reading it again for the channels
	// and the host's panel cost every view two reads of the store.
	app, listed := appListed(apps, ci.AppID)
	var host *views.HostPanel
	if listed {
		host = s.hosts.hostPanelOf(ctx, ci, app)
	}
	m := views.Circuit{
		Page: s.page(c, ci.Function, "circuits"), AppID: ci.AppID, App: appName(apps, ci.AppID), Function: ci.Function,
		Base: circuitHref(ci), State: ci.State.String(), Tone: stateTone(ci.State), Open: ci.State.TriggerOff(), Pending: ci.Pending(),
		TriggerStatus: ci.TriggerStatus(), TriggerTone: confirmationTone(ci.ConfirmationOf()), Host: host, SetAside: s.hosts.functionSetAside(c, ci.AppID, ci.Function),
		ApplyError: ci.ApplyError, RetryAt: ci.ApplyRetryAt, CanDelete: ci.Stuck(), Shadow: ci.Shadow,
		Rule:  ci.RuleText(),
		Count: counts[ci.ID()].Counted, CountSpan: countSpan(ci, counts[ci.ID()], now), InWindow: counts[ci.ID()].Window, Threshold: ci.Threshold, Episode: ci.Episode, ChangedAt: ci.ChangedAt, Reason: ci.Reason,
		Drift: ci.Drift, DriftSince: ci.DriftSince, Recipients: strings.Join(ci.Recipients, ", "), Channels: channelsText(ci, app), Escalation: escalationText(ci, app, now), Acked: ackedText(ci),
		Settings: ci.Settings,
		Policy:   views.Words(ci.PolicyText()), CanAct: access.For(p).Acts(app.Team),
		WindowBars: addedUp(windowBars(rows, ci.ID(), ci.Window, now)), WindowThreshold: countThreshold(ci), WindowSpan: spoken.Duration(ci.Window), DayBars: dayBars(day, rows, ci.ID(), recentFrom, now),
	}
	m.NextPause, m.NextPauseForecast, m.NextPauseExpires = s.hosts.nextPause(ctx, ci)
	m.Probe = s.probeOf(ctx, ci, now)
	m.Quorum = ci.QuorumText(counts[ci.ID()].Instances)
	m.Throttle, m.Asked = throttleLines(ci, now), ci.Asked && ci.State == circuit.Closed
	m.ThrottlePlan = ci.Throttles() && ci.State == circuit.Closed
	m.Errors, m.ErrorsOther, m.ErrorsSpan = s.errorGroups(ctx, ci, now)
	if listed {
		m.Cost = app.SwitchCost(ci.Function, nil) // listing the others costs an ARM call: the trip's confirmation names them
	}
	for _, src := range circuit.BySource(rows, ci.ID(), now.Add(-ci.Window), now, 20) {
		m.Sources = append(m.Sources, views.SourceRow{Source: src.Source, Failures: src.Failures, Successes: src.Successes})
	}
	if ci.Policy.AutoResume {
		if at := ci.TrialAt(); !at.IsZero() {
			m.Policy = m.Policy.Then(". Next trial: ").When(at, views.Long).
				Then(fmt.Sprintf(" (trip %d in a row, cooldown %s)", max(ci.Streak, 1), spoken.Duration(ci.Cooldown().Round(time.Second))))
		}
	}
	for _, f := range flips {
		m.Flips = append(m.Flips, views.FlipRow{Episode: f.Episode, From: f.From.String(), To: f.To.String(), ToTone: stateTone(f.To),
			At: f.At, Actor: f.Actor, Count: flipCount(f), Reason: f.Reason, Record: episodeHref(ci, f)})
	}
	return render(c, http.StatusOK, views.CircuitPage(m))
}

// throttleLines say the circuit's throttle stage and what it holds now.
func throttleLines(ci circuit.Circuit, now time.Time) []string {
	if !ci.Throttles() {
		return nil
	}
	lines := []string{upperFirst(ci.ThrottleText()) + "."}
	if ci.Throttle.Ask {
		lines[0] = upperFirst(ci.ThrottleText()) + "; it asks first, by a notice with an Apply link."
	}
	if ci.Asked && ci.State == circuit.Closed {
		lines = append(lines, "Its rule fired at "+ci.ChangedAt.UTC().Format("15:04 MST")+": it is waiting for someone to apply the throttle.")
	}
	if ci.State == circuit.Throttled {
		line := fmt.Sprintf("Now holding the app at %s of its concurrency before (step %d of %d)", percentOf(ci.ThrottleShare()), ci.ThrottleStage+1, len(throttle.Ramp)+1)
		if !ci.Pending() {
			line += fmt.Sprintf("; the next step up comes once %s has passed since %s with the rule quiet", spoken.Duration(ci.QuietFor()), ci.SwitchedAt().UTC().Format("15:04 MST"))
		}
		lines = append(lines, line+".")
	}
	if ci.Lowered != nil {
		changed := throttle.At(ci.Lowered, ci.LoweredKind, throttle.Ramp[0])
		for _, k := range slices.Sorted(maps.Keys(changed)) {
			if v := ci.Lowered[k]; v != nil {
				lines = append(lines, fmt.Sprintf("%s was %s before the throttle; it is put back so.", k, *v))
				continue
			}
			lines = append(lines, fmt.Sprintf("%s was absent before the throttle; it is removed again at the end.", k))
		}
		if ci.Released != "" {
			lines = append(lines, "Handed back, left as set and not put back at the end: "+ci.Released+".")
		}
	}
	return lines
}

func percentOf(share float64) string { return fmt.Sprintf("%d %%", int(share*100)) }

// countSpan says which failures a count covers.
func countSpan(ci circuit.Circuit, n circuit.Counts, now time.Time) views.Sentence {
	if (ci.Rule.Ratio > 0 || ci.Rule.NoSuccess) && n.SuccessesUnknown() {
		return append(views.Words("failed, calls unknown: no rate is judged, since this function's Executed records show no succeeded call (a log level above Information hides them) and no span of it arrived; "), countSpanOf(ci, n, now)...)
	}
	if ci.Rule.Ratio > 0 && n.Counted+n.Successes > 0 {
		calls := n.Counted + n.Successes
		return append(views.Words(fmt.Sprintf("failed of %d calls (%.1f %%), ", calls, 100*float64(n.Counted)/float64(calls))), countSpanOf(ci, n, now)...)
	}
	return countSpanOf(ci, n, now)
}

func countSpanOf(ci circuit.Circuit, n circuit.Counts, now time.Time) views.Sentence {
	switch {
	case ci.State == circuit.HalfOpen && ci.Pending():
		return views.Words("the trial starts once the trigger is on")
	case ci.State == circuit.HalfOpen:
		return views.Words("since the trigger went back on at ").When(n.Since, views.Clock)
	case n.Since.After(now.Add(-ci.Window)):
		return views.Words("since the last change at ").When(n.Since, views.Clock).Then(" (within the " + spoken.Duration(ci.Window) + " window)")
	}
	return views.Words("in the last " + spoken.Duration(ci.Window))
}

// flipCount says what a flip-log entry counted: "101 / 100 in 30s", or
// "101 / 100 since 09:00:05 UTC" when the count began after the window did.
func flipCount(f circuit.Flip) views.Sentence {
	if f.Calls > f.Count {
		return views.Words(fmt.Sprintf("%d failed of %d calls", f.Count, f.Calls))
	}
	if !f.Since.IsZero() && f.Since.After(f.At.Add(-f.Window)) {
		return views.Words(fmt.Sprintf("%d / %d since ", f.Count, f.Threshold)).When(f.Since, views.Clock)
	}
	return views.Words(fmt.Sprintf("%d / %d in %s", f.Count, f.Threshold, spoken.Duration(f.Window)))
}

// circuitOf loads the circuit the path names; a missing one is a 404.
func (s *core) circuitOf(c echo.Context) (circuit.Circuit, error) {
	appID, function := c.Param("app"), c.Param("function")
	ci, err := s.Circuits.Get(c.Request().Context(), appID, function)
	if errors.Is(err, circuit.ErrNoCircuit) {
		return ci, echo.NewHTTPError(http.StatusNotFound, "There is no such circuit.")
	}
	return ci, err
}

// episodeHref is the record of the episode a trip started; "" for a flip
// that was no trip.
func episodeHref(ci circuit.Circuit, f circuit.Flip) string {
	if !episode.Starts(f) {
		return ""
	}
	return circuitHref(ci) + "/episodes/" + strconv.FormatInt(f.Episode, 10)
}

func circuitHref(ci circuit.Circuit) string {
	return "/circuits/" + url.PathEscape(ci.AppID) + "/" + url.PathEscape(ci.Function)
}

// channelsText names where a circuit's alerts go besides its addresses.
func channelsText(ci circuit.Circuit, app circuit.App) string {
	if len(ci.Channels) > 0 {
		return strings.Join(ci.Channels, ", ")
	}
	if len(app.Channels) == 0 {
		return ""
	}
	return strings.Join(app.Channels, ", ") + " (the app's)"
}

// escalationText says who else is told when an episode goes
// unacknowledged, and when the open one does.
func escalationText(ci circuit.Circuit, app circuit.App, now time.Time) string {
	own := ci.Escalate.On()
	ci.Escalate = ci.EscalationOf(app)
	if !ci.Escalate.On() {
		return ""
	}
	text := strings.Join(ci.Escalate.To, ", ") + ", after " + spoken.Duration(ci.Escalate.After) + " unacknowledged"
	if !own {
		text += " (the app's)"
	}
	switch at := ci.ChangedAt.Add(ci.Escalate.After); {
	case ci.State != circuit.Open || ci.Shadow || ci.AckedEpisode == ci.Episode:
	case ci.EscalationDue(now):
		text += " (due since " + at.UTC().Format("15:04 MST") + ": see the notifications)"
	default:
		text += " (at " + at.UTC().Format("15:04 MST") + " unless someone acknowledges this episode)"
	}
	return text
}

// ackedText says who acknowledged the current episode.
func ackedText(ci circuit.Circuit) views.Sentence {
	if ci.AckedEpisode != ci.Episode || ci.AckedBy == "" {
		return nil
	}
	return views.Words(ci.AckedBy+" at ").When(ci.AckedAt, views.Clock)
}

func confirmationTone(c circuit.Confirmation) string {
	switch c {
	case circuit.Confirmed:
		return "ok"
	case circuit.Contradicted:
		return "bad"
	case circuit.Unconfirmable:
		return "muted"
	}
	return "warn"
}

// addedUp turns failures per bucket into the running total across the
// window, so the chart meets the threshold line where the count would.
func addedUp(bars []int) []int {
	out := make([]int, len(bars))
	total := 0
	for i, b := range bars {
		total += b
		out[i] = total
	}
	return out
}

// countThreshold is the count the window's chart draws as its line: the
// threshold of a count rule; none for a ratio rule, whose line is a share.
func countThreshold(ci circuit.Circuit) int {
	if ci.Rule.Ratio > 0 {
		return 0
	}
	return ci.Threshold
}

// maxErrorGroups bounds the groups a circuit page shows.
const maxErrorGroups = 10

// errorGroups groups the failures of the window before the trip (while the
// trigger is off) or of the window now, by their error text.
func (s *CircuitPages) errorGroups(ctx context.Context, ci circuit.Circuit, now time.Time) ([]views.ErrorGroupRow, int, string) {
	groups, other, span, err := s.Samples.OfCircuit(ctx, ci, now, maxErrorGroups)
	if err != nil {
		return nil, 0, span + " (its failures could not be read now)"
	}
	app := s.appOfTraces(ctx, ci.AppID, groups)
	out := make([]views.ErrorGroupRow, 0, len(groups))
	for _, g := range groups {
		out = append(out, errorGroupRow(g, app))
	}
	return out, other, span
}

// appOfTraces reads the app whose groups these are, for the links of
// their sample traces: only when one has a trace, and without it (a read
// that failed) the traces are shown unlinked.
func (s *CircuitPages) appOfTraces(ctx context.Context, appID string, groups []errortexts.Group) circuit.App {
	if !slices.ContainsFunc(groups, func(g errortexts.Group) bool { return len(g.Traces) > 0 }) {
		return circuit.App{}
	}
	app, _ := s.Apps.Get(ctx, appID)
	return app
}

// errorGroupRow is a group as the pages show it: its sample traces link
// to their transaction in the app's Application Insights, when it names
// one.
func errorGroupRow(g errortexts.Group, app circuit.App) views.ErrorGroupRow {
	return views.ErrorGroupRow{Example: g.Text(), Count: g.Count, First: g.First, Last: g.Last, Sources: strings.Join(g.Sources, ", "), Traces: g.Traces, Links: traceLinks(g, app)}
}

// traceLinks are, for each of a group's sample traces, its transaction in
// the app's Application Insights; nil when the app names none.
func traceLinks(g errortexts.Group, app circuit.App) []string {
	if app.InsightsAppID == "" || len(g.Spans) != len(g.Traces) || len(g.Traces) == 0 {
		return nil
	}
	links := make([]string, len(g.Traces))
	for i, span := range g.Spans {
		links[i] = insightsLink(app.InsightsAppID, span)
	}
	return links
}

// insightsLink opens an item of an Application Insights resource (by its
// Application ID) in the portal's end-to-end transaction view: the link
// the Application Insights team gives for this (ApplicationInsights-Home
// issue 281), unlike the address the portal shows. Both parts were
// checked when stored (a GUID; a span id of 16 hexadecimal digits).
func insightsLink(appID, itemID string) string {
	return "https://portal.azure.com/#blade/AppInsightsExtension/Find/appid/" + appID + "/itemid/" + itemID
}

// probeOf is ci's health probe as its page shows it: what it heard in
// this episode and what waits for it.
func (s *CircuitPages) probeOf(ctx context.Context, ci circuit.Circuit, now time.Time) *views.CircuitProbe {
	if ci.Probe.URL == "" {
		return nil
	}
	p := ci.Probe.WithDefaults()
	m := &views.CircuitProbe{URL: p.URL, Every: spoken.Duration(p.Every), Good: p.Good}
	if s.Probes == nil {
		return m
	}
	r, err := s.Probes.Get(ctx, ci.AppID, ci.Function)
	if err != nil || r.Episode != ci.Episode {
		r = circuit.ProbeRecord{}
	}
	m.Waits, m.InARow = ci.ProbeWaits(r, now), r.InARow
	m.Heard = r.Answers
	for _, a := range r.Answers {
		m.Answers = append(m.Answers, views.ProbeAnswer{At: a.At, Good: a.Good, Said: a.Said, Took: a.Took.Round(time.Millisecond).String()})
	}
	return m
}
