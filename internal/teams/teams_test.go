package teams_test

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/fusebox/fusebox/internal/auth"
	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/teams"
)

func TestParseGrants(t *testing.T) {
	for spec, want := range map[string]struct {
		role auth.Role
		on   map[string]auth.Role
		ok   bool
	}{
		"admin":                          {auth.RoleAdmin, nil, true},
		"viewer":                         {auth.RoleViewer, nil, true},
		"operator@billing":               {auth.RoleNone, map[string]auth.Role{"billing": auth.RoleOperator}, true},
		"viewer@orders+operator@billing": {auth.RoleNone, map[string]auth.Role{"orders": auth.RoleViewer, "billing": auth.RoleOperator}, true},
		"viewer@orders+operator@orders":  {auth.RoleNone, map[string]auth.Role{"orders": auth.RoleOperator}, true},
		"admin@billing":                  {ok: false},
		"operator@Billing":               {ok: false},
		"operator@":                      {ok: false},
		"root":                           {ok: false},
		"none":                           {ok: false},
	} {
		role, on, err := teams.ParseGrants(spec)
		if (err == nil) != want.ok || (want.ok && (role != want.role || !reflect.DeepEqual(on, want.on))) {
			t.Errorf("%q: %v %v %v; want %v %v ok=%v", spec, role, on, err, want.role, want.on, want.ok)
		}
	}
}

// Membership comes from a provider's claim values or a local user's name,
// never a provider's value that names a local user; a role already held
// on a team is kept when higher.
func TestApply(t *testing.T) {
	ts := []teams.Team{
		{Name: "billing", Members: []teams.Member{{Who: "g-billing", Role: auth.RoleOperator}, {Who: "user:victor", Role: auth.RoleViewer}}},
		{Name: "orders", Members: []teams.Member{{Who: "g-readers", Role: auth.RoleViewer}}},
	}
	sso := teams.Apply(ts, auth.Principal{Provider: "oidc", Claims: []string{"g-billing", "user:victor", "g-other"}})
	if want := map[string]auth.Role{"billing": auth.RoleOperator}; !reflect.DeepEqual(sso.Teams, want) {
		t.Errorf("single sign-on: %v, want %v (a provider's user: value names no local user)", sso.Teams, want)
	}
	local := teams.Apply(ts, auth.Principal{Provider: "local", Name: "victor", Teams: map[string]auth.Role{"billing": auth.RoleOperator}})
	if want := map[string]auth.Role{"billing": auth.RoleOperator}; !reflect.DeepEqual(local.Teams, want) {
		t.Errorf("local user: %v, want %v", local.Teams, want)
	}
	if token := teams.Apply(ts, auth.Principal{Provider: "token", Claims: nil}); len(token.Teams) != 0 {
		t.Errorf("a principal of no claims gained %v", token.Teams)
	}
}

func TestParseAndCheckMembers(t *testing.T) {
	ms, err := teams.ParseMembers("operator 6a1f0c2e\n\n  viewer user:victor  \n")
	if err != nil || !reflect.DeepEqual(ms, []teams.Member{{Who: "6a1f0c2e", Role: auth.RoleOperator}, {Who: "user:victor", Role: auth.RoleViewer}}) {
		t.Errorf("%v %v", ms, err)
	}
	for _, bad := range []string{"admin g-1", "g-1", "owner g-1"} {
		if _, err := teams.ParseMembers(bad); err == nil {
			t.Errorf("%q was read", bad)
		}
	}
	if p := (teams.Team{Name: "Billing"}).Check(); p["name"] == "" {
		t.Error("an upper-case name passed")
	}
	if p := (teams.Team{Name: "billing", Members: []teams.Member{{Who: "g", Role: auth.RoleViewer}, {Who: "g", Role: auth.RoleOperator}}}).Check(); p["members"] == "" {
		t.Error("a member listed twice passed")
	}
}

// The directory reads the stored teams at most every TTL, whoever asks,
// and merges the configured members in.
func TestDirectoryReadsAtMostEveryTTL(t *testing.T) {
	now := time.Date(2026, 12, 7, 9, 0, 0, 0, time.UTC)
	reads := 0
	d := &teams.Directory{
		List: func(context.Context) ([]teams.Team, error) {
			reads++
			return []teams.Team{{Name: "orders", Members: []teams.Member{{Who: "g-1", Role: auth.RoleViewer}}}}, nil
		},
		Configured: []teams.Team{{Name: "orders", Members: []teams.Member{{Who: "g-2", Role: auth.RoleOperator}}}, {Name: "billing"}},
		Now:        func() time.Time { return now },
	}
	for range 3 {
		ts, err := d.All(t.Context())
		if err != nil || len(ts) != 2 || ts[0].Name != "billing" || len(ts[1].Members) != 2 || !ts[1].Members[1].Configured {
			t.Fatalf("%+v %v", ts, err)
		}
	}
	now = now.Add(teams.TTL)
	if _, err := d.All(t.Context()); err != nil || reads != 2 {
		t.Errorf("%d reads, want 2: one, then one after the TTL", reads)
	}
}

func TestDefaultChannels(t *testing.T) {
	ts := []teams.Team{{Name: "billing", Channels: []string{"billing-mail"}}}
	apps := []circuit.App{{ID: "a", Team: "billing"}, {ID: "b", Team: "billing", Channels: []string{"own"}}, {ID: "c"}}
	got := teams.DefaultChannels(apps, ts)
	if !reflect.DeepEqual(got[0].Channels, []string{"billing-mail"}) || !reflect.DeepEqual(got[1].Channels, []string{"own"}) || got[2].Channels != nil {
		t.Errorf("%+v", got)
	}
	if apps[0].Channels != nil {
		t.Error("the apps given were changed")
	}
}

func TestAnEnvironmentsScopeIsReadAsARMWritesIt(t *testing.T) {
	const sub = "7e2c1f4a-5b6d-4e8f-9a0b-1c2d3e4f5a6b"
	env := "/subscriptions/" + sub + "/resourceGroups/rg-platform/providers/Microsoft.App/managedEnvironments/shared-env"
	s, err := teams.ParseScope(strings.ToUpper(env[:15]) + env[15:])
	if err != nil || s.String() != env || s.Environment != "shared-env" {
		t.Fatalf("ParseScope(env) = %+v, %v; want the environment, written back as %s", s, err, env)
	}
	inRG := circuit.App{Switch: circuit.SwitchContainerApp, SubscriptionID: sub, ResourceGroup: "rg-platform"}
	if s.HoldsApp(inRG) {
		t.Error("an environment's scope holds an app by its resource group; want only by its environment")
	}
	inRG.Hosting.Environment = strings.ToUpper(env)
	if !s.HoldsApp(inRG) {
		t.Error("an environment's scope does not hold an app ARM says runs in it")
	}
	for _, bad := range []string{
		"/subscriptions/" + sub + "/providers/Microsoft.App/managedEnvironments/shared-env",
		"/subscriptions/" + sub + "/resourceGroups/rg/providers/Microsoft.App/managedEnvironments/-bad",
		"/subscriptions/" + sub + "/resourceGroups/rg/providers/Microsoft.App/managedEnvironments/",
		"/subscriptions/" + sub + "/resourceGroups/rg/providers/Microsoft.Web/sites/func",
	} {
		if s, err := teams.ParseScope(bad); err == nil {
			t.Errorf("ParseScope(%q) = %+v; want an error", bad, s)
		}
	}
}
