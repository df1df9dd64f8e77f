package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fusebox/fusebox/internal/alerts"
	"github.com/fusebox/fusebox/internal/apptest"
	"github.com/fusebox/fusebox/internal/auth"
	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/demo"
)

// TestExportAndApplyFromTheCommandLine: fusebox export writes the demo's
// configuration; apply --dry-run of it says there is nothing to change
// (exit 0), of a changed file what would change (exit 2, errChanges), and
// changes nothing; a file with a problem is refused with its line; apply
// makes the change.
func TestExportAndApplyFromTheCommandLine(t *testing.T) {
	token, hash := auth.NewAPIToken()
	srv := apptest.Start(t, map[string]string{"FUSEBOX_API_TOKENS": "deploy-bot:operator:" + hash})
	if err := demo.Seed(t.Context(), srv.App.Store, t.TempDir()+"/local.settings.json", srv.Clock.Now()); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"FUSEBOX_URL": srv.URL, "FUSEBOX_API_TOKEN": token}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	fusebox := func(args ...string) (string, error) {
		var out, errs bytes.Buffer
		err := run(t.Context(), args, lookup, strings.NewReader(""), &out, &errs)
		return out.String(), err
	}
	exported, err := fusebox("export")
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "fusebox.yaml")
	write := func(s string) {
		if err := os.WriteFile(file, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(exported)
	if out, err := fusebox("apply", "-f", file, "--dry-run"); err != nil || !strings.Contains(out, "0 to change") {
		t.Errorf("dry run of the export: %v\n%s", err, out)
	}
	write(strings.Replace(exported, "threshold: 50", "threshold: 60", 1)) // SyncInventory
	out, err := fusebox("apply", "-f", file, "--dry-run")
	if !errors.Is(err, errChanges) || !strings.Contains(out, "~ update circuit orders-demo/SyncInventory") || !strings.Contains(out, "threshold: 50 -> 60") {
		t.Errorf("dry run of a change: %v (want errChanges, exit 2)\n%s", err, out)
	}
	if c, _ := srv.App.Store.Circuits.Get(t.Context(), demo.AppID, "SyncInventory"); c.Threshold != 50 {
		t.Errorf("the dry run changed the threshold to %d", c.Threshold)
	}
	write(strings.Replace(exported, "threshold: 50", "threshold: many", 1))
	if _, err := fusebox("apply", "-f", file); err == nil || !strings.Contains(err.Error(), "nothing was changed") || !strings.Contains(err.Error(), "line ") {
		t.Errorf("a file with a problem: %v, want it refused with its line", err)
	}
	write(strings.Replace(exported, "threshold: 50", "threshold: 60", 1))
	if out, err := fusebox("apply", "-f", file); err != nil || !strings.Contains(out, "1 changed") {
		t.Errorf("apply: %v\n%s", err, out)
	}
	if c, _ := srv.App.Store.Circuits.Get(t.Context(), demo.AppID, "SyncInventory"); c.Threshold != 60 {
		t.Errorf("after apply the threshold is %d, want 60", c.Threshold)
	}
	delete(env, "FUSEBOX_API_TOKEN")
	if _, err := fusebox("export"); err == nil || !strings.Contains(err.Error(), "FUSEBOX_API_TOKEN") {
		t.Errorf("export without a token: %v", err)
	}
}

// A team's token exports its team's part alone (not another team's apps,
// nor the channels shared between teams, which it may name but not hold);
// a file naming another team's app or team is refused whole, changing
// nothing of its own part either; the token stops when it is revoked.
func TestATeamsTokenExportsAndAppliesOnlyItsTeamsPart(t *testing.T) {
	srv := apptest.Start(t, nil)
	ctx := t.Context()
	st := srv.App.Store
	if err := demo.Seed(ctx, st, t.TempDir()+"/local.settings.json", srv.Clock.Now()); err != nil {
		t.Fatal(err)
	}
	now := srv.Clock.Now()
	if err := st.Apps.Put(ctx, circuit.App{ID: "billing-app", Team: demo.TeamBilling, Switch: circuit.SwitchLocal, LocalSettings: t.TempDir() + "/billing.json"}); err != nil {
		t.Fatal(err)
	}
	if err := st.Circuits.Put(ctx, circuit.Circuit{AppID: "billing-app", Function: "ChargeCards", Settings: circuit.Settings{Threshold: 10, Window: time.Minute, Channels: []string{"everyone"}},
		State: circuit.Closed, ChangedAt: now}); err != nil {
		t.Fatal(err)
	}
	for _, ch := range []alerts.Channel{{ID: "everyone", Name: "Shared list", Kind: alerts.ChannelMail, Addresses: []string{"all@example.com"}},
		{ID: "billing-mail", Name: "Billing list", Kind: alerts.ChannelMail, Addresses: []string{"billing@example.com"}, Team: demo.TeamBilling}} {
		ch.CreatedAt = now
		if err := st.Channels.Create(ctx, ch); err != nil {
			t.Fatal(err)
		}
	}
	id, token, hash := auth.NewIssuedToken()
	if err := st.Tokens.Insert(ctx, auth.IssuedToken{ID: id, Name: "billing-ci", Role: auth.RoleOperator, Team: demo.TeamBilling, CreatedBy: "olivia",
		CreatedAt: now, Expires: now.Add(24 * time.Hour), Hash: hash}); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"FUSEBOX_URL": srv.URL, "FUSEBOX_API_TOKEN": token}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	fusebox := func(args ...string) (string, error) {
		var out, errs bytes.Buffer
		err := run(ctx, args, lookup, strings.NewReader(""), &out, &errs)
		return out.String(), err
	}
	exported, err := fusebox("export")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"id: billing-app", "team: billing", "function: ChargeCards", "id: billing-mail"} {
		if !strings.Contains(exported, want) {
			t.Errorf("billing's export lacks %q:\n%s", want, exported)
		}
	}
	for _, not := range []string{demo.AppID, "SyncInventory", "Nightly sales summary", "id: everyone"} {
		if strings.Contains(exported, not) {
			t.Errorf("billing's export holds %q, not billing's:\n%s", not, exported)
		}
	}
	file := filepath.Join(t.TempDir(), "billing.yaml")
	write := func(s string) {
		if err := os.WriteFile(file, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(exported)
	if out, err := fusebox("apply", "-f", file, "--dry-run"); err != nil || !strings.Contains(out, "0 to change") {
		t.Errorf("dry run of billing's export: %v\n%s", err, out)
	}
	changed := strings.Replace(exported, "threshold: 10", "threshold: 12", 1)
	for name, tc := range map[string]struct{ content, says string }{
		"another team's circuit": {strings.Replace(changed, "circuits:\n", "circuits:\n  - app: orders-demo\n    function: SyncInventory\n    threshold: 1\n    window: 1m\n", 1),
			`no registered function app "orders-demo"`},
		"an app moved to another team": {strings.Replace(changed, "- id: billing-app\n    team: billing", "- id: billing-app\n    team: orders", 1),
			"the app billing-app is team orders's, which this token does not operate"},
	} {
		write(tc.content)
		if out, err := fusebox("apply", "-f", file); err == nil || !strings.Contains(err.Error(), "nothing was changed") || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%s: %v, want the file refused whole\n%s", name, err, out)
		}
	}
	if c, _ := st.Circuits.Get(ctx, "billing-app", "ChargeCards"); c.Threshold != 10 {
		t.Errorf("a refused file changed billing's threshold to %d", c.Threshold)
	}
	if c, _ := st.Circuits.Get(ctx, demo.AppID, "SyncInventory"); c.Threshold != 50 {
		t.Errorf("a refused file changed orders' threshold to %d", c.Threshold)
	}
	write(changed)
	if out, err := fusebox("apply", "-f", file); err != nil || !strings.Contains(out, "1 changed") {
		t.Errorf("apply of billing's change: %v\n%s", err, out)
	}
	if err := st.Tokens.Revoke(ctx, id, now); err != nil {
		t.Fatal(err)
	}
	srv.Clock.Advance(auth.IssuedTokenTTL)
	if _, err := fusebox("export"); err == nil || !strings.Contains(err.Error(), "401") {
		t.Errorf("export with the revoked token: %v, want 401", err)
	}
}
