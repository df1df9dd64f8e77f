package web

import (
	"context"
	"errors"
	"github.com/fusebox/fusebox/internal/alerts"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/spoken"
	"github.com/fusebox/fusebox/internal/views"
)

// circuitNew shows the form for a new circuit. With ?app=, it offers that
// app's functions as ARM lists them.
func (s *CircuitPages) circuitNew(c echo.Context) error {
	m := views.CircuitForm{Threshold: "100", Window: "30s", Rule: "count", Ratio: "50", MinCalls: "100", Cooldown: "5m", App: c.QueryParam("app"), Function: c.QueryParam("function")}
	return s.renderCircuitForm(c, http.StatusOK, m)
}

// circuitCreate saves a new circuit; invalid settings come back with a
// message per field.
func (s *CircuitPages) circuitCreate(c echo.Context) error {
	m := formValues(c)
	set, problems := parseSettings(m)
	if len(problems) > 0 { // else the service checks the channels, once
		problems = withChannelProblems(c, s.KnownChannels, set.Channels, problems)
	}
	p, _ := principal(c)
	if len(problems) == 0 {
		ci, err := s.Breakers.Create(c.Request().Context(), m.App, m.Function, set, p.Name)
		if err == nil {
			s.setFlash(c, "created")
			return c.Redirect(http.StatusSeeOther, circuitHref(ci))
		}
		if problems = fieldProblems(err); problems == nil {
			return err
		}
	}
	m.Errors, m.Preview = problems, preview(set, problems)
	return s.renderCircuitForm(c, http.StatusUnprocessableEntity, m)
}

// circuitEdit shows a circuit's settings for change.
func (s *CircuitPages) circuitEdit(c echo.Context) error {
	ci, err := s.circuitOf(c)
	if err != nil {
		return err
	}
	m := views.CircuitForm{Editing: true, App: ci.AppID, Function: ci.Function, Threshold: strconv.Itoa(ci.Threshold),
		Window: spoken.Duration(ci.Window), Recipients: strings.Join(ci.Recipients, ", "), Channels: strings.Join(ci.Channels, ", "), Text: ci.Settings.Spec(), AutoResume: ci.Policy.AutoResume, Cooldown: "5m",
		Rule: "count", Ratio: "50", MinCalls: "100", NoSuccess: ci.Rule.NoSuccess, Preview: ci.RuleText(), Shadow: ci.Shadow}
	if ci.Rule.MinInstances > 1 {
		m.Quorum = strconv.Itoa(ci.Rule.MinInstances)
	}
	if ci.Throttle.Threshold > 0 {
		m.ThrottleThreshold = strconv.Itoa(ci.Throttle.Threshold)
	}
	if ci.Throttle.Quiet > 0 {
		m.ThrottleQuiet = spoken.Duration(ci.Throttle.Quiet)
	}
	m.ThrottleAsk, m.ThrottleOnly = ci.Throttle.Ask, ci.Throttle.OnlyThrottling
	m.ThrottleWords = strings.Join(ci.Throttle.Words, ", ")
	m.AlertRules = strings.Join(ci.AlertRules, "\n")
	m.PauseWindows = strings.Join(ci.Spec().PauseWindows, "\n")
	if ci.Probe.Good > 0 {
		m.ProbeGood = strconv.Itoa(ci.Probe.Good)
	}
	if ci.Probe.Every > 0 {
		m.ProbeEvery = spoken.Duration(ci.Probe.Every)
	}
	if ci.Rule.Ratio > 0 {
		m.Rule, m.Ratio, m.MinCalls = "ratio", strconv.FormatFloat(ci.Rule.Ratio*100, 'f', -1, 64), strconv.Itoa(ci.Rule.MinCalls)
	}
	if ci.Policy.Cooldown > 0 {
		m.Cooldown = spoken.Duration(ci.Policy.Cooldown)
	}
	if ci.Policy.MaxCooldown > 0 {
		m.MaxCooldown = spoken.Duration(ci.Policy.MaxCooldown)
	}
	m.EscalateTo = strings.Join(ci.Escalate.To, ", ")
	if ci.HubRetention > 0 {
		m.HubRetention = spoken.Duration(ci.HubRetention)
	}
	if ci.Escalate.After > 0 {
		m.EscalateAfter = spoken.Duration(ci.Escalate.After)
	}
	m.CanDelete = (ci.State == circuit.Closed && !ci.Pending()) || ci.Stuck()
	return s.renderCircuitForm(c, http.StatusOK, m)
}

// circuitUpdate saves changed settings.
func (s *CircuitPages) circuitUpdate(c echo.Context) error {
	ci, err := s.circuitOf(c)
	if err != nil {
		return err
	}
	m := formValues(c)
	m.Editing, m.App, m.Function = true, ci.AppID, ci.Function
	set, problems := parseSettings(m)
	if len(problems) > 0 { // else the service checks the channels, once
		problems = withChannelProblems(c, s.KnownChannels, set.Channels, problems)
	}
	p, _ := principal(c)
	if len(problems) == 0 {
		_, err := s.Breakers.Update(c.Request().Context(), ci.AppID, ci.Function, set, p.Name)
		if err == nil {
			s.setFlash(c, "saved")
			return c.Redirect(http.StatusSeeOther, circuitHref(ci))
		}
		if problems = fieldProblems(err); problems == nil {
			return s.afterAction(c, ci, err, "")
		}
	}
	m.Errors, m.Preview = problems, preview(set, problems)
	return s.renderCircuitForm(c, http.StatusUnprocessableEntity, m)
}

// circuitDelete removes a closed circuit.
func (s *CircuitPages) circuitDelete(c echo.Context) error {
	p, _ := principal(c)
	if err := s.Breakers.Delete(c.Request().Context(), c.Param("app"), c.Param("function"), p.Name); err != nil {
		if errors.Is(err, circuit.ErrStillOpen) || errors.Is(err, circuit.ErrSwitching) {
			return echo.NewHTTPError(http.StatusConflict, err.Error())
		}
		return err
	}
	s.setFlash(c, "deleted")
	return c.Redirect(http.StatusSeeOther, "/circuits")
}

func (s *CircuitPages) renderCircuitForm(c echo.Context, status int, m views.CircuitForm) error {
	ctx := c.Request().Context()
	apps, err := s.Apps.List(ctx)
	if err != nil {
		return err
	}
	apps = scopeOf(c).Operated(apps)
	for _, a := range apps {
		m.Apps = append(m.Apps, views.Option{Value: a.ID, Label: appName(apps, a.ID)})
	}
	if m.App == "" && len(apps) > 0 {
		m.App = apps[0].ID
	}
	if m.Editing {
		m.Page = s.page(c, "Settings of "+m.Function, "circuits")
		base := "/circuits/" + m.App + "/" + m.Function
		m.Action, m.Cancel, m.DeleteURL = base+"/edit", base, base+"/delete"
	} else {
		m.Page = s.page(c, "New circuit", "circuits")
		m.Action, m.Cancel = "/circuits/new", "/circuits"
		for _, a := range apps {
			if a.ID == m.App {
				// Best effort: without ARM access the picker is empty and
				// the name is typed.
				listCtx, cancel := context.WithTimeout(ctx, 3*time.Second)
				if names, err := s.Switches.Functions(listCtx, a); err == nil {
					m.Functions = names
				}
				cancel()
			}
		}
	}
	return render(c, status, views.CircuitFormPage(m))
}

func formValues(c echo.Context) views.CircuitForm {
	m := views.CircuitForm{
		App: strings.TrimSpace(c.FormValue("app")), Function: strings.TrimSpace(c.FormValue("function")),
		Threshold: strings.TrimSpace(c.FormValue("threshold")), Window: strings.TrimSpace(c.FormValue("window")),
		Rule: c.FormValue("rule"), Ratio: strings.TrimSpace(c.FormValue("ratio")), MinCalls: strings.TrimSpace(c.FormValue("min_calls")), NoSuccess: c.FormValue("no_success") == "on", Quorum: strings.TrimSpace(c.FormValue("min_instances")),
		Recipients: strings.TrimSpace(c.FormValue("recipients")), Channels: strings.TrimSpace(c.FormValue("channels")), AutoResume: c.FormValue("auto_resume") == "on", Shadow: c.FormValue("shadow") == "on",
		Cooldown: strings.TrimSpace(c.FormValue("cooldown")), MaxCooldown: strings.TrimSpace(c.FormValue("max_cooldown")),
		EscalateTo: strings.TrimSpace(c.FormValue("escalate_to")), EscalateAfter: strings.TrimSpace(c.FormValue("escalate_after")),
		HubRetention:      strings.TrimSpace(c.FormValue("event_hub_retention")),
		ThrottleThreshold: strings.TrimSpace(c.FormValue("throttle_threshold")), ThrottleQuiet: strings.TrimSpace(c.FormValue("throttle_quiet")), ThrottleAsk: c.FormValue("throttle_ask") == "on", ThrottleOnly: c.FormValue("throttle_only") == "on",
		ThrottleWords: strings.TrimSpace(c.FormValue("throttle_words")),
		AlertRules:    strings.TrimSpace(c.FormValue("alert_rules")),
		PauseWindows:  strings.TrimSpace(c.FormValue("pause_windows")),
		ProbeGood:     strings.TrimSpace(c.FormValue("probe_good")),
		ProbeEvery:    strings.TrimSpace(c.FormValue("probe_every")),
	}
	bindText(c, &m.Text)
	return m
}

// bindText sets spec's text settings from the form's fields of the same
// JSON names, trimmed: a new text setting of circuit.Spec needs no code
// here. Numbers, durations, lists and boxes are parsed by parseSettings.
func bindText(c echo.Context, spec *circuit.Spec) {
	v := reflect.ValueOf(spec).Elem()
	for i := range v.NumField() {
		f := v.Type().Field(i)
		if f.Type.Kind() != reflect.String {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		v.Field(i).SetString(strings.TrimSpace(c.FormValue(name)))
	}
}

// parseSettings turns the form's text into settings; what does not parse is
// reported by field, and the rest is left to the service's validation.
func parseSettings(m views.CircuitForm) (circuit.Settings, map[string]string) {
	problems := map[string]string{}
	set := m.Text.Settings()
	n, err := strconv.Atoi(m.Threshold)
	if err != nil {
		problems["threshold"] = "must be a whole number, such as 100"
	}
	set.Threshold = n
	w, err := time.ParseDuration(m.Window)
	if err != nil {
		problems["window"] = "must be a duration such as 30s, 5m or 1h"
	}
	set.Window = w
	if m.Rule == "ratio" {
		pct, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(m.Ratio), "%"), 64)
		if err != nil {
			problems["ratio"] = "must be a percentage, such as 50"
		}
		calls, err := strconv.Atoi(m.MinCalls)
		if err != nil {
			problems["min_calls"] = "must be a whole number, such as 200"
		}
		set.Rule = circuit.Rule{Ratio: pct / 100, MinCalls: calls}
		if set.Rule.Ratio == 0 && problems["ratio"] == "" {
			problems["ratio"] = "must be more than 0 %"
		}
	}
	set.Rule.NoSuccess = m.NoSuccess
	if m.Quorum != "" {
		n, err := strconv.Atoi(m.Quorum)
		if err != nil {
			problems["min_instances"] = "must be a whole number of instances, such as 2, or empty for none"
		}
		set.Rule.MinInstances = n
	}
	if m.ThrottleThreshold != "" {
		n, err := strconv.Atoi(m.ThrottleThreshold)
		if err != nil {
			problems["throttle_threshold"] = "must be a whole number of failures, such as 40, or empty for no throttle stage"
		}
		set.Throttle.Threshold = n
	}
	if m.ThrottleQuiet != "" {
		d, err := time.ParseDuration(m.ThrottleQuiet)
		if err != nil {
			problems["throttle_quiet"] = "must be a duration such as 10m, or empty for 5m"
		}
		set.Throttle.Quiet = d
	}
	set.Throttle.Ask, set.Throttle.OnlyThrottling = m.ThrottleAsk, m.ThrottleOnly
	set.Throttle.Words = splitComma(m.ThrottleWords)
	set.AlertRules = strings.Fields(m.AlertRules)
	set.PauseWindows = circuit.Spec{PauseWindows: lines(m.PauseWindows)}.Settings().PauseWindows
	if m.ProbeGood != "" {
		n, err := strconv.Atoi(m.ProbeGood)
		if err != nil {
			problems["probe_good"] = "must be a whole number of answers, such as 3, or empty for 3"
		}
		set.Probe.Good = n
	}
	if m.ProbeEvery != "" {
		d, err := time.ParseDuration(m.ProbeEvery)
		if err != nil {
			problems["probe_every"] = "must be a duration such as 10s, or empty for 10s"
		}
		set.Probe.Every = d
	}
	set.Recipients, set.Channels = splitComma(m.Recipients), splitComma(m.Channels)
	set.Escalate.To = splitComma(m.EscalateTo)
	if m.HubRetention != "" {
		d, err := time.ParseDuration(m.HubRetention)
		if err != nil {
			problems["event_hub_retention"] = "must be a duration in hours, such as 24h or 168h, or empty when not known"
		}
		set.HubRetention = d
	}
	if m.EscalateAfter != "" {
		d, err := time.ParseDuration(m.EscalateAfter)
		if err != nil {
			problems["escalate_after"] = "must be a duration such as 30m, or empty for no escalation"
		}
		set.Escalate.After = d
	}
	set.Policy.AutoResume, set.Shadow = m.AutoResume, m.Shadow
	if m.AutoResume {
		cd, err := time.ParseDuration(m.Cooldown)
		if err != nil {
			problems["cooldown"] = "must be a duration such as 5m"
		}
		set.Policy.Cooldown = cd
		if m.MaxCooldown != "" {
			mc, err := time.ParseDuration(m.MaxCooldown)
			if err != nil {
				problems["max_cooldown"] = "must be a duration such as 1h, or empty for 16 × the cooldown"
			}
			set.Policy.MaxCooldown = mc
		}
	}
	if len(problems) == 0 {
		return set, nil
	}
	return set, problems
}

// splitComma splits a comma-separated form field, dropping empty items.
func splitComma(s string) []string {
	var out []string
	for _, r := range strings.Split(s, ",") {
		if r = strings.TrimSpace(r); r != "" {
			out = append(out, r)
		}
	}
	return out
}

// withChannelProblems adds a message when ids name no channel, so a form
// with other problems shows that one too; a form with none leaves the
// check to the service's Create or Update.
func withChannelProblems(c echo.Context, known alerts.KnownChannels, ids []string, problems map[string]string) map[string]string {
	err := known.Check(c.Request().Context(), ids)
	if err == nil {
		return problems
	}
	if problems == nil {
		problems = map[string]string{}
	}
	if fp := fieldProblems(err); fp != nil {
		problems["channels"] = fp["channels"]
	} else {
		problems["channels"] = "the channels could not be checked: " + err.Error()
	}
	return problems
}

func fieldProblems(err error) map[string]string {
	var v circuit.ValidationError
	if !errors.As(err, &v) {
		if errors.Is(err, circuit.ErrExists) {
			return map[string]string{"function": err.Error()}
		}
		return nil
	}
	out := map[string]string{}
	for _, f := range v {
		out[f.Field] = f.Message
	}
	return out
}

// preview says the typed rule in words, when it parsed.
func preview(set circuit.Settings, problems map[string]string) string {
	for _, f := range []string{"threshold", "window", "ratio", "min_calls"} {
		if problems[f] != "" {
			return ""
		}
	}
	return circuit.Circuit{Settings: circuit.Settings{Threshold: set.Threshold, Window: set.Window, Rule: set.Rule}}.RuleText()
}

// lines are s's non-empty lines, trimmed.
func lines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}
