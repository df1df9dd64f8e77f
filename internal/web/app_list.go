package web

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/fusebox/fusebox/internal/access"
	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/fleet"
	"github.com/fusebox/fusebox/internal/funcapp"
	"github.com/fusebox/fusebox/internal/otlp"
	"github.com/fusebox/fusebox/internal/setaside"
	"github.com/fusebox/fusebox/internal/views"
)

// appList shows the registered function apps.
func (s *AppPages) appList(c echo.Context) error {
	ctx := c.Request().Context()
	apps, err := s.Apps.List(ctx)
	if err != nil {
		return err
	}
	cs, err := s.Circuits.Recent(ctx, listFreshness)
	if err != nil {
		return err
	}
	sc := scopeOf(c)
	cs, apps = sc.Circuits(access.TeamOf(apps), cs), sc.Apps(apps)
	perApp := map[string]int{}
	has := map[string]bool{}
	for _, ci := range cs {
		perApp[ci.AppID]++
		has[ci.AppID+"/"+ci.Function] = true
	}
	rates, err := s.Rates.Since(ctx, s.Now().Add(-time.Hour))
	if err != nil {
		return err
	}
	noCircuit := functionsWithoutCircuit(rates, has)
	m := views.Apps{Page: s.page(c, "Apps", "apps"), CanAct: scopeOf(c).ActsAnywhere()}
	var kept map[string]setaside.AppSetAside
	if s.Kept != nil {
		if kept, err = s.Kept.All(ctx); err != nil {
			s.Logger.Warn("set-aside queues not read", "error", err)
		}
	}
	for _, a := range apps {
		m.Rows = append(m.Rows, views.AppRow{ID: a.ID, Name: appName(apps, a.ID), Switch: string(a.Switch), Target: funcapp.Target(a),
			Circuits: perApp[a.ID], HasKey: a.APIKeyHash != "", Hosting: hostingText(a.Hosting), Insight: insightText(a), NoCircuit: noCircuit[a.ID],
			Telemetry: s.appTelemetry(ctx, a), SetAside: setAsideText(a, kept[a.ID], s.Queues != nil)})
		if s.Drift != nil {
			if d, ok := s.Drift.Of(a.ID); ok {
				row := &m.Rows[len(m.Rows)-1]
				row.Drift, row.DriftChecked = driftLines(d), views.Ago(s.Now(), d.CheckedAt)
			}
		}
	}
	return render(c, http.StatusOK, views.AppsPage(m))
}

// appTelemetry is what an app exported over OpenTelemetry, from every
// Fusebox instance's rows; nil when it sent nothing in a day. Rows that
// cannot be read now are said so, and the page is still shown.
func (s *AppPages) appTelemetry(ctx context.Context, a circuit.App) *views.AppTelemetry {
	now := s.Now()
	rows, err := s.Calls.ArrivalsOf(ctx, a.ID, now.Add(-otlp.Expect))
	if err != nil {
		return &views.AppTelemetry{Unreadable: true}
	}
	sum := otlp.Summarize(rows, a.Site, now)
	if !sum.Any() {
		return nil
	}
	out := &views.AppTelemetry{Site: a.Site, ForeignNames: sum.ForeignNames, LastSeen: views.Ago(now, sum.Last)}
	if sum.Silent {
		out.Silent = "No OpenTelemetry data since " + views.Ago(now, sum.Last) + ": failures of this app are not being counted from it. Check the app's OTEL_EXPORTER_OTLP_* settings and its key."
	}
	for _, src := range []otlp.Source{otlp.Traces, otlp.Logs} {
		h, ok := sum.Hour[src]
		if !ok {
			continue
		}
		sig := views.TelemetrySignal{Source: string(src), Protocol: h.Protocol, Exports: h.Exports, Records: h.Records, Invocations: h.Invocations,
			Counted: h.Counted, Failures: h.Failures, Duplicates: h.Duplicates, ThroughLogs: h.ThroughLogs, Refused: h.Rejected, Outranked: h.Outranked, MissedFailures: h.MissedFailures, JobRuns: h.JobRuns}
		for why, n := range h.Unattributed {
			sig.Unattributed = append(sig.Unattributed, views.Because{Why: why, Count: n})
		}
		sort.Slice(sig.Unattributed, func(i, j int) bool { return sig.Unattributed[i].Why < sig.Unattributed[j].Why })
		out.Signals = append(out.Signals, sig)
	}
	return out
}

// functionsWithoutCircuit are, per app, the functions that failed in the
// minutes of rates and have no circuit, most failures first.
func functionsWithoutCircuit(rates []circuit.MinuteCount, has map[string]bool) map[string][]views.FunctionFailures {
	sums := map[string]int{}
	for _, r := range rates {
		if !has[r.Circuit] {
			sums[r.Circuit] += r.Count
		}
	}
	out := map[string][]views.FunctionFailures{}
	for id, n := range sums {
		app, function, _ := strings.Cut(id, "/")
		out[app] = append(out[app], views.FunctionFailures{Function: function, Failures: n})
	}
	for _, fs := range out {
		sort.Slice(fs, func(i, j int) bool {
			if fs[i].Failures != fs[j].Failures {
				return fs[i].Failures > fs[j].Failures
			}
			return fs[i].Function < fs[j].Function
		})
	}
	return out
}

// insightText says what Fusebox reads of the app's own storage and hub.
func insightText(a circuit.App) string {
	switch {
	case a.HostStorage != "" && a.EventHubs != "":
		return "host insight: its storage and its Event Hubs"
	case a.HostStorage != "":
		return "host insight: its storage"
	}
	return ""
}

// setAsideText sums up what an app's set-aside queues hold for the apps
// list; "" when Fusebox reads none of its storage.
func setAsideText(a circuit.App, kept setaside.AppSetAside, reads bool) string {
	if !reads || a.HostStorage == "" {
		return ""
	}
	if kept.Problem != "" {
		return "could not be read"
	}
	n, queues := 0, 0
	for _, k := range kept.Queues {
		if k.Count > 0 {
			n, queues = n+k.Count, queues+1
		}
	}
	if n == 0 {
		return "nothing"
	}
	return fmt.Sprintf("%d messages in %d %s", n, queues, map[bool]string{true: "queue", false: "queues"}[queues == 1])
}

// driftLines say what changed in Azure under an app, for its row.
func driftLines(d fleet.AppDrift) []string {
	switch {
	case d.Gone:
		return []string{d.Problem}
	case d.Problem != "":
		return []string{"Not checked: " + d.Problem}
	}
	var out []string
	if len(d.Unguarded) > 0 {
		out = append(out, "No circuit for event-driven "+names(d.Unguarded))
	}
	if len(d.Untimed) > 0 {
		out = append(out, "No job for timer "+names(d.Untimed))
	}
	if len(d.GoneCircuits) > 0 {
		out = append(out, "Circuits whose function is gone: "+names(d.GoneCircuits))
	}
	if len(d.GoneJobs) > 0 {
		out = append(out, "Jobs whose function is gone: "+names(d.GoneJobs))
	}
	for _, ch := range d.Changed {
		out = append(out, "Circuit "+ch.Function+" was set up for "+ch.Was+"; its trigger is now "+ch.Now)
	}
	return out
}

// names lists function names, the first ten.
func names(fns []string) string {
	if len(fns) > 10 {
		return strings.Join(fns[:10], ", ") + fmt.Sprintf(" and %d more", len(fns)-10)
	}
	return strings.Join(fns, ", ")
}
