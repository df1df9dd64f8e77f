package web

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/egress"
	"github.com/fusebox/fusebox/internal/fleet"
	"github.com/fusebox/fusebox/internal/funcapp"
	"github.com/fusebox/fusebox/internal/spoken"
	"github.com/fusebox/fusebox/internal/views"
)

// guardTimeout bounds ARM's listing of the functions and settings of the
// app being guarded.
const guardTimeout = 20 * time.Second

// appGuardShow proposes how to guard a site Discover found: the app as it
// would be registered, a circuit per event-driven function, a job per timer.
func (s *AppPages) appGuardShow(c echo.Context) error {
	m, _, err := s.proposal(c, c.QueryParam)
	if err != nil {
		return err
	}
	return render(c, http.StatusOK, views.GuardPlanPage(m))
}

// appGuard saves what the operator confirmed. The plan is made again from
// ARM, not taken from the page: the page carries no setting's value, and
// what it posts only unticks and tunes what ARM listed.
func (s *AppPages) appGuard(c echo.Context) error {
	m, plan, err := s.proposal(c, c.FormValue)
	if err != nil || m.Off != "" {
		if err == nil {
			err = render(c, http.StatusOK, views.GuardPlanPage(m))
		}
		return err
	}
	form, err := c.FormParams()
	if err != nil {
		return err
	}
	plan, m, problems := confirmed(plan, m, form)
	if len(problems) == 0 {
		p, _ := principal(c)
		var g funcapp.Guarded
		if g, err = s.Guarding.Guard(c.Request().Context(), plan, p.Name); err == nil {
			return render(c, http.StatusOK, views.AppKeyPage(views.AppKey{Page: s.page(c, "Key of "+g.Registered.App.ID, "apps"),
				AppID: g.Registered.App.ID, Key: g.Registered.Key, URL: s.Config.BaseURL.String(), Hosting: hostingText(g.Registered.App.Hosting),
				Note: g.Registered.Note, Guarded: guardedLines(plan, g)}))
		}
		var ve circuit.ValidationError
		if !errors.As(err, &ve) {
			return err
		}
		for _, f := range ve {
			// The page shows the id, site and recipients by field; the
			// rest (host storage, channels…) with the plan.
			field := f.Field
			if field != "id" && field != "site" && field != "recipients" {
				field, f.Message = "plan", strings.TrimSpace(strings.ReplaceAll(f.Field, "_", " ")+": "+f.Message)
			}
			problems[field] = strings.TrimPrefix(problems[field]+"; "+f.Message, "; ")
		}
	}
	m.Errors = problems
	return render(c, http.StatusUnprocessableEntity, views.GuardPlanPage(m))
}

// proposal finds the site named by get (subscription, resource_group,
// site, slot) in the last survey, reads its functions and settings from
// ARM, and proposes a plan; m.Off says why there is none.
func (s *AppPages) proposal(c echo.Context, get func(string) string) (views.GuardPlan, fleet.Plan, error) {
	q := func(k string) string { return strings.TrimSpace(get(k)) }
	m := views.GuardPlan{Page: s.page(c, "Guard an app", "apps"), Subscription: q("subscription"), ResourceGroup: q("resource_group"), Site: q("site"), Slot: q("slot")}
	var err error
	if m.Team, err = s.teamChoice(c, q("team"), "admins' alone"); err != nil {
		return m, fleet.Plan{}, err
	}
	if m.Team.Value == "" {
		m.Team.Value = teamNamedIn(m.Team.Options, m.Site, m.ResourceGroup)
	}
	if s.Fleet == nil || s.Discoverer == nil {
		m.Off = "Fusebox surveys no subscription: set FUSEBOX_DISCOVER_SUBSCRIPTIONS and give its identity Reader there (deploy/azure/discovery.bicep)."
		return m, fleet.Plan{}, nil
	}
	sv, _, err := s.Fleet.Latest(c.Request().Context())
	if err != nil {
		return m, fleet.Plan{}, err
	}
	want := fleet.Site{Subscription: m.Subscription, ResourceGroup: m.ResourceGroup, Name: m.Site}.Key()
	i := slices.IndexFunc(sv.Sites, func(site fleet.Site) bool { return site.Key() == want })
	switch {
	case i < 0:
		m.Off = "This site is not among the function apps of the last survey: open Discover again."
		return m, fleet.Plan{}, nil
	case sv.Sites[i].Guarded && m.Slot == "":
		m.Off = "This site is guarded already: its app's page lists its functions and what guards them."
		return m, fleet.Plan{}, nil
	}
	site := sv.Sites[i]
	ctx, cancel := context.WithTimeout(c.Request().Context(), guardTimeout)
	defer cancel()
	in, err := s.Discoverer.Inspect(ctx, circuit.App{SubscriptionID: site.Subscription, ResourceGroup: site.ResourceGroup, Site: site.Name, Slot: m.Slot})
	if err != nil {
		m.Off = "ARM did not list the functions: " + err.Error()
		return m, fleet.Plan{}, nil
	}
	plan := fleet.Propose(site, m.Slot, in.Functions, in.Settings, "blob."+egress.Clouds[s.Config.AzureCloud].Storage)
	plan.ZeroCodeRefused = fleet.ZeroCodeRefusal(in.Settings, s.Config.BaseURL.String(), plan.App.ID)
	m.ID, m.Name, m.Hosting = plan.App.ID, plan.App.DisplayName, hostingText(site.Hosting)
	m.ZeroCodeRefused = plan.ZeroCodeRefused
	m.HostStorageFrom, m.EventHubsFrom = plan.HostStorageFrom, plan.EventHubsFrom
	if in.Unread != "" {
		m.HostStorageFrom = "the app's settings were not read: " + in.Unread
	}
	for _, pc := range plan.Circuits {
		gc := views.GuardCircuit{Function: pc.Function, Kind: pc.Kind, Why: pc.Why, Window: spoken.Duration(pc.Settings.Window),
			Rule:     circuit.Circuit{Settings: circuit.Settings{Threshold: pc.Settings.Threshold, Window: pc.Settings.Window, Rule: pc.Settings.Rule}}.RuleText(),
			Consumes: cmp.Or(pc.Settings.EventHub, pc.Settings.Queue)}
		if pc.Settings.Rule.Ratio == 0 {
			gc.Threshold = strconv.Itoa(pc.Settings.Threshold)
		}
		m.Circuits = append(m.Circuits, gc)
	}
	for _, pj := range plan.Jobs {
		m.Jobs = append(m.Jobs, views.GuardJob{Function: pj.Function, Schedule: pj.Schedule, TimeZone: cmp.Or(pj.TimeZone, "UTC (WEBSITE_TIME_ZONE is not set)"), Grace: spoken.Duration(pj.Grace)})
	}
	for _, l := range plan.Left {
		m.Left = append(m.Left, views.GuardLeft{Function: l.Function, Why: l.Why})
	}
	return m, plan, nil
}

// confirmed applies the operator's form to the plan: the app's id and
// name, the recipients, which circuits and jobs stay ticked, and their
// thresholds, windows and graces.
func confirmed(plan fleet.Plan, m views.GuardPlan, form map[string][]string) (fleet.Plan, views.GuardPlan, map[string]string) {
	v := func(k string) string {
		if vs := form[k]; len(vs) > 0 {
			return strings.TrimSpace(vs[0])
		}
		return ""
	}
	problems := map[string]string{}
	plan.App.ID, plan.App.DisplayName, plan.App.Team = v("id"), v("name"), v("team")
	m.Team.Value = plan.App.Team
	m.ID, m.Name, m.Recipients = plan.App.ID, plan.App.DisplayName, v("recipients")
	recipients := splitComma(m.Recipients)
	var bad []string
	circuits := plan.Circuits[:0:0]
	for i, pc := range plan.Circuits {
		if !slices.Contains(form["circuit"], pc.Function) {
			m.Circuits[i].Off = true
			continue
		}
		if pc.Settings.Rule.Ratio == 0 {
			m.Circuits[i].Threshold = v("threshold_" + pc.Function)
			n, err := strconv.Atoi(m.Circuits[i].Threshold)
			if err != nil || n < 1 || n > circuit.MaxThreshold {
				bad = append(bad, fmt.Sprintf("%s: the failures must be a whole number from 1 to %d", pc.Function, circuit.MaxThreshold))
			}
			pc.Settings.Threshold = n
		}
		m.Circuits[i].Window = v("window_" + pc.Function)
		w, err := time.ParseDuration(m.Circuits[i].Window)
		if err != nil || w < time.Second || w > circuit.MaxWindow {
			bad = append(bad, pc.Function+": the window must be a duration such as 1m, at most 24h")
		}
		pc.Settings.Window, pc.Settings.Recipients = w, recipients
		circuits = append(circuits, pc)
	}
	jobs := plan.Jobs[:0:0]
	for i, pj := range plan.Jobs {
		if !slices.Contains(form["job"], pj.Function) {
			m.Jobs[i].Off = true
			continue
		}
		m.Jobs[i].Grace = v("grace_" + pj.Function)
		g, err := time.ParseDuration(m.Jobs[i].Grace)
		if err != nil || g < 0 {
			bad = append(bad, pj.Function+": the grace must be a duration such as 5m")
		}
		pj.Grace = g
		jobs = append(jobs, pj)
	}
	plan.Circuits, plan.Jobs = circuits, jobs
	plan.ZeroCode = v("zero_code") == "on" && plan.ZeroCodeRefused == ""
	m.ZeroCode = plan.ZeroCode
	if len(bad) > 0 {
		problems["plan"] = strings.Join(bad, "; ")
	}
	return plan, m, problems
}

// guardedLines say what guarding made and what it could not.
func guardedLines(plan fleet.Plan, g funcapp.Guarded) []string {
	var out []string
	for _, pc := range plan.Circuits {
		if slices.Contains(g.Circuits, pc.Function) {
			out = append(out, "Circuit "+pc.Function+": "+circuit.Circuit{Settings: circuit.Settings{Threshold: pc.Settings.Threshold, Window: pc.Settings.Window, Rule: pc.Settings.Rule}}.RuleText()+".")
		}
	}
	for _, pj := range plan.Jobs {
		if slices.Contains(g.Jobs, pj.Function) {
			witness := "the host's timer status in its storage tells when it ran, no ping needed"
			if plan.App.HostStorage == "" {
				witness = "without the host's storage, the job's page gives the ping to add to the function"
			}
			out = append(out, "Job "+pj.Function+": "+pj.Schedule+" "+cmp.Or(pj.TimeZone, "UTC")+", "+spoken.Duration(pj.Grace)+" of grace; "+witness+".")
		}
	}
	for _, r := range g.Refused {
		out = append(out, "Not made, "+r.Function+": "+r.Why)
	}
	if g.ZeroCode != "" {
		out = append(out, g.ZeroCode)
	}
	if plan.HostStorageFrom != "" {
		out = append(out, "Host storage: "+plan.HostStorageFrom+".")
	}
	return out
}

// teamNamedIn proposes the team whose name the site or its resource group
// carries (func-billing, rg-billing: billing), or none.
func teamNamedIn(options []views.Option, names ...string) string {
	for _, o := range options {
		for _, n := range names {
			if o.Value != "" && slices.Contains(strings.FieldsFunc(strings.ToLower(n), func(r rune) bool { return r == '-' || r == '_' || r == '.' }), o.Value) {
				return o.Value
			}
		}
	}
	return ""
}
