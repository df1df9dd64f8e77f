package manifest_test

import (
	"bytes"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/fusebox/fusebox/internal/apptest"
	"github.com/fusebox/fusebox/internal/auth"
	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/demo"
	"github.com/fusebox/fusebox/internal/manifest"
	"github.com/fusebox/fusebox/internal/teams"
)

// seeded is the demo's Fusebox, and a client with an operator's token.
func seeded(t *testing.T) (*apptest.Server, *manifest.Client) {
	t.Helper()
	token, hash := auth.NewAPIToken()
	srv := apptest.Start(t, map[string]string{"FUSEBOX_API_TOKENS": "deploy-bot:operator:" + hash})
	if err := demo.Seed(t.Context(), srv.App.Store, t.TempDir()+"/local.settings.json", srv.Clock.Now()); err != nil {
		t.Fatal(err)
	}
	return srv, &manifest.Client{Base: srv.URL, Token: token, HTTP: &http.Client{Timeout: 30 * time.Second}}
}

func noEnv(string) (string, bool) { return "", false }

func export(t *testing.T, c *manifest.Client) []byte {
	t.Helper()
	doc, err := c.Current(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	b, err := manifest.Marshal(doc, "exported by a test")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// plan parses a file, checks it against Fusebox and plans it.
func plan(t *testing.T, c *manifest.Client, file []byte, prune bool, env manifest.Env) (manifest.Plan, manifest.Problems) {
	t.Helper()
	doc, ps := manifest.Parse(file)
	if len(ps) > 0 {
		return manifest.Plan{}, ps
	}
	current, err := c.Current(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	doc.Normalize()
	if ps := manifest.Check(doc, current, prune, env); len(ps) > 0 {
		return manifest.Plan{}, ps
	}
	return manifest.MakePlan(doc, current, prune, env), nil
}

// TestAnExportAppliedChangesNothing: the demo's configuration, exported,
// is the same bytes twice, names no secret, and applied back (with
// --prune) plans no change.
func TestAnExportAppliedChangesNothing(t *testing.T) {
	_, c := seeded(t)
	first, second := export(t, c), export(t, c)
	if !bytes.Equal(first, second) {
		t.Fatalf("two exports differ:\n%s\n---\n%s", first, second)
	}
	for _, want := range []string{"version: 1", "id: " + demo.AppID, "function: SyncInventory", "slug: nightly-sales-summary"} {
		if !bytes.Contains(first, []byte(want)) {
			t.Errorf("the export lacks %q:\n%s", want, first)
		}
	}
	if bytes.Contains(first, []byte("fbx_")) || bytes.Contains(first, []byte("loop")) {
		t.Errorf("the export holds a key or Fusebox's own loops:\n%s", first)
	}
	p, ps := plan(t, c, first, true, noEnv)
	if len(ps) > 0 || !p.Empty() {
		t.Fatalf("applying an export plans %v (problems %v), want nothing", p, ps)
	}
}

// TestApplyMakesFuseboxMatchTheFile: a file that adds a channel, a job
// and a maintenance window, changes a circuit's threshold and leaves out
// a circuit and a job: the dry run's plan says so line by line; applying
// it makes Fusebox match, so that planning again finds nothing; without
// --prune what the file leaves out stays, with it it goes (apps never).
func TestApplyMakesFuseboxMatchTheFile(t *testing.T) {
	srv, c := seeded(t)
	file := string(export(t, c))
	file = strings.Replace(file, "threshold: 100\n    window: 30s", "threshold: 250\n    window: 30s\n    runbook_url: https://wiki.example.com/prices\n    runbook_note: Ask the supplier first", 1) // ImportPrices comes first
	file = strings.Replace(file, "channels: []", "", 1)
	file += `channels:
  - id: night-shift
    name: Night shift
    kind: mail
    addresses: [night@example.com]
maintenance:
  - app: orders-demo
    from: 2030-01-01T00:00:00Z
    until: 2030-01-01T02:00:00Z
    reason: store migration
`
	file = strings.Replace(file, "jobs:\n", "jobs:\n  - name: Weekly report\n    slug: weekly-report\n    schedule: 0 7 * * 1\n    time_zone: Europe/Paris\n    grace: 30m\n    channels: [night-shift]\n", 1)
	p, ps := plan(t, c, []byte(file), false, noEnv)
	if len(ps) > 0 {
		t.Fatalf("problems: %v\n%s", ps, file)
	}
	text := p.String()
	for _, want := range []string{"+ create channel night-shift", "~ update circuit orders-demo/ImportPrices", "threshold: 100 -> 250",
		"+ create job slug weekly-report", "+ create maintenance window 2030-01-01T00:00:00Z to 2030-01-01T02:00:00Z for orders-demo: store migration", "4 to change"} {
		if !strings.Contains(text, want) {
			t.Errorf("the plan lacks %q:\n%s", want, text)
		}
	}
	var out bytes.Buffer
	if err := c.Apply(t.Context(), p.Changes, noEnv, &out); err != nil {
		t.Fatalf("apply: %v\n%s", err, out.String())
	}
	ci, err := srv.App.Store.Circuits.Get(t.Context(), demo.AppID, "ImportPrices")
	if err != nil || ci.Threshold != 250 || ci.Runbook != (circuit.Runbook{URL: "https://wiki.example.com/prices", Note: "Ask the supplier first"}) {
		t.Errorf("ImportPrices' threshold is %d and runbook %+v (%v), want 250 and the file's", ci.Threshold, ci.Runbook, err)
	}
	if again, _ := plan(t, c, []byte(file), false, noEnv); !again.Empty() {
		t.Errorf("planning the applied file again: %s", again)
	}

	// Leave out SendReceipts' circuit (half-open: not deleted until
	// resumed) and ProcessOrders' (closed), and the queue depth job.
	lessFile := cutEntry(t, file, "function: ProcessOrders")
	lessFile = cutEntry(t, lessFile, "slug: queue-depth-check")
	kept, _ := plan(t, c, []byte(lessFile), false, noEnv)
	if !kept.Empty() || !strings.Contains(kept.String(), "= kept circuit orders-demo/ProcessOrders") {
		t.Errorf("without --prune what the file leaves out must stay:\n%s", kept)
	}
	pruned, ps := plan(t, c, []byte(lessFile), true, noEnv)
	if len(ps) > 0 {
		t.Fatal(ps)
	}
	for _, want := range []string{"- delete circuit orders-demo/ProcessOrders", "- delete job slug queue-depth-check"} {
		if !strings.Contains(pruned.String(), want) {
			t.Errorf("the pruning plan lacks %q:\n%s", want, pruned)
		}
	}
	noApp, _ := plan(t, c, []byte(cutEntry(t, lessFile, "id: orders-demo")), true, noEnv)
	if !strings.Contains(noApp.String(), "= kept app orders-demo (apply never removes an app)") || strings.Contains(noApp.String(), "delete app") {
		t.Errorf("an app the file leaves out must stay, even with --prune:\n%s", noApp)
	}
	if err := c.Apply(t.Context(), pruned.Changes, noEnv, &out); err != nil {
		t.Fatal(err)
	}
	if _, err := srv.App.Store.Circuits.Get(t.Context(), demo.AppID, "ProcessOrders"); err == nil {
		t.Error("ProcessOrders' circuit was not pruned")
	}
	if _, err := srv.App.Store.Apps.Get(t.Context(), demo.AppID); err != nil {
		t.Errorf("the app went: %v", err)
	}
}

// cutEntry removes the list entry that holds line from a file.
func cutEntry(t *testing.T, file, line string) string {
	t.Helper()
	lines := strings.Split(file, "\n")
	at := -1
	for i, l := range lines {
		if strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(l), "- ")) == line {
			at = i
		}
	}
	if at < 0 {
		t.Fatalf("no %q in the file", line)
	}
	start := at
	for !strings.HasPrefix(strings.TrimSpace(lines[start]), "- ") {
		start--
	}
	end := at + 1
	indent := len(lines[start]) - len(strings.TrimLeft(lines[start], " "))
	for end < len(lines) && strings.HasPrefix(lines[end], strings.Repeat(" ", indent+2)) {
		end++
	}
	return strings.Join(append(lines[:start:start], lines[end:]...), "\n")
}

// TestAFileWithProblemsIsRefusedWhole: every problem is named with its
// line, and nothing is planned.
func TestAFileWithProblemsIsRefusedWhole(t *testing.T) {
	_, c := seeded(t)
	file := `version: 1
apps:
  - id: orders-demo
    switch: local
    site: func-orders-elsewhere
circuits:
  - app: orders-demo
    function: ProcessOrders
    threshold: 0
    window: 30s
  - app: billing
    function: Charge
    threshold: 5
    window: 1m
    channels: [pager]
jobs:
  - name: Nightly
    schedule: not a schedule
`
	_, ps := plan(t, c, []byte(file), false, noEnv)
	got := manifest.Problems(ps).Error()
	for _, want := range []string{"line 3: local_settings: the app orders-demo is registered with", "line 3: site:",
		"line 7: threshold: must be at least 1", "line 11: app: there is no registered function app \"billing\"",
		`line 11: channels: there is no channel "pager"`, "line 17: schedule:"} {
		if !strings.Contains(got, want) {
			t.Errorf("the problems lack %q:\n%s", want, got)
		}
	}
	_, ps = plan(t, c, []byte("version: 1\ncircuits:\n  - app: a\n    function: F\n    treshold: 5\n    window: 1h30\n"), false, noEnv)
	got = manifest.Problems(ps).Error()
	for _, want := range []string{"line 5: field treshold not found", `line 6: "1h30" is not a duration`} {
		if !strings.Contains(got, want) {
			t.Errorf("the problems lack %q:\n%s", want, got)
		}
	}
}

// TestAnAdminsFileGivesTeamsTheirScopes: an admin's export holds each
// team's scopes; a file that changes billing's is planned as an update of
// the team, applied through the API, and leaves its members as they are
// then (one removed meanwhile is not put back); planning again finds
// nothing. A file of anyone but an admin
// naming a team is refused whole.
func TestAnAdminsFileGivesTeamsTheirScopes(t *testing.T) {
	token, hash := auth.NewAPIToken()
	opToken, opHash := auth.NewAPIToken()
	srv := apptest.Start(t, map[string]string{"FUSEBOX_API_TOKENS": "platform:admin:" + hash + ",reader:viewer:" + opHash})
	if err := demo.Seed(t.Context(), srv.App.Store, t.TempDir()+"/local.settings.json", srv.Clock.Now()); err != nil {
		t.Fatal(err)
	}
	c := &manifest.Client{Base: srv.URL, Token: token, HTTP: &http.Client{Timeout: 30 * time.Second}}
	put, _ := http.NewRequest(http.MethodPut, srv.URL+"/api/v1/teams/billing", strings.NewReader(`{"members": [{"who": "g-billing-ops", "role": "operator"}], "channels": []}`))
	put.Header.Set("Authorization", "Bearer "+token)
	put.Header.Set("Content-Type", "application/json")
	if r, err := http.DefaultClient.Do(put); err != nil || r.StatusCode != http.StatusNoContent {
		t.Fatalf("billing's members: %v %v", r, err)
	}
	const sub = "7e2c1f4a-5b6d-4e8f-9a0b-1c2d3e4f5a6b"
	file := string(export(t, c))
	if !strings.Contains(file, "- name: billing\n    scopes: []") {
		t.Fatalf("the admin's export lacks billing's scopes:\n%s", file)
	}
	env := "/subscriptions/" + strings.ToUpper(sub) + "/resourceGroups/rg-platform/providers/Microsoft.App/managedEnvironments/shared-env"
	file = strings.Replace(file, "- name: billing\n    scopes: []", "- name: billing\n    scopes: [/subscriptions/"+sub+"/resourceGroups/RG-Billing, "+env+"]", 1)
	p, ps := plan(t, c, []byte(file), false, noEnv)
	if len(ps) > 0 {
		t.Fatalf("problems: %v", ps)
	}
	if text := p.String(); !strings.Contains(text, "~ update team billing") || !strings.Contains(text, "1 to change") {
		t.Fatalf("the plan of billing's scopes:\n%s", text)
	}
	// Meanwhile another admin removes billing's member: applying the
	// scopes must not put it back.
	removed, _ := http.NewRequest(http.MethodPut, srv.URL+"/api/v1/teams/billing", strings.NewReader(`{"members": []}`))
	removed.Header.Set("Authorization", "Bearer "+token)
	removed.Header.Set("Content-Type", "application/json")
	if r, err := http.DefaultClient.Do(removed); err != nil || r.StatusCode != http.StatusNoContent {
		t.Fatalf("removing billing's member: %v %v", r, err)
	}
	var out bytes.Buffer
	if err := c.Apply(t.Context(), p.Changes, noEnv, &out); err != nil {
		t.Fatalf("apply: %v\n%s", err, out.String())
	}
	ts, err := srv.App.Store.Teams.List(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, tm := range ts {
		if tm.Name != "billing" {
			continue
		}
		if got := strings.Fields(teamsScopes(tm.Scopes)); len(got) != 2 || got[0] != "/subscriptions/"+sub+"/resourceGroups/rg-billing" {
			t.Errorf("billing's scopes after apply: %v", got)
		}
		if len(tm.Members) != 0 {
			t.Errorf("billing's members after apply: %+v; want none: the member removed meanwhile stays removed", tm.Members)
		}
	}
	if p, ps := plan(t, c, []byte(file), false, noEnv); len(ps) > 0 || !p.Empty() {
		t.Errorf("planning the applied file again: %v (problems %v), want nothing", p, ps)
	}

	op := &manifest.Client{Base: srv.URL, Token: opToken, HTTP: &http.Client{Timeout: 30 * time.Second}}
	_, ps = plan(t, op, []byte("version: 1\nteams:\n  - name: orders\n    scopes: [/subscriptions/"+sub+"]\n"), false, noEnv)
	if !strings.Contains(ps.Error(), "only an admin gives teams their Azure scopes") {
		t.Errorf("a viewer's file naming a team: %v; want it refused", ps)
	}
}

func teamsScopes(ss []teams.Scope) string { return teams.FormatScopes(ss) }
