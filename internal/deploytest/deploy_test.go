// Package deploytest checks deploy/azure against the code and the docs:
// the ARM template parses, its Bicep twin and docs/deploy.md name the same
// parameters, and every FUSEBOX_* variable it sets is one Fusebox reads.
package deploytest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/fusebox/fusebox/internal/switches/appservice"
)

func root(t *testing.T) string {
	_, here, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(here), "..", "..")
}

func read(t *testing.T, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root(t), rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func names(re *regexp.Regexp, s string) []string {
	seen := map[string]bool{}
	var out []string
	for _, m := range re.FindAllStringSubmatch(s, -1) {
		if !seen[m[1]] {
			seen[m[1]] = true
			out = append(out, m[1])
		}
	}
	sort.Strings(out)
	return out
}

func TestTemplateMatchesCodeAndDocs(t *testing.T) {
	raw := read(t, "deploy/azure/main.json")
	var tpl struct {
		Schema     string                     `json:"$schema"`
		Parameters map[string]json.RawMessage `json:"parameters"`
		Resources  []struct {
			Type string `json:"type"`
		} `json:"resources"`
	}
	if err := json.Unmarshal([]byte(raw), &tpl); err != nil {
		t.Fatalf("main.json does not parse: %v", err)
	}
	if tpl.Schema == "" || len(tpl.Resources) == 0 {
		t.Fatal("main.json is not a deployment template")
	}
	var params []string
	for p := range tpl.Parameters {
		params = append(params, p)
	}
	sort.Strings(params)

	bicep := names(regexp.MustCompile(`(?m)^param (\w+)`), read(t, "deploy/azure/main.bicep"))
	if !slices.Equal(bicep, params) {
		t.Errorf("main.bicep's parameters %v differ from main.json's %v", bicep, params)
	}
	docs := read(t, "docs/deploy.md")
	documented := names(regexp.MustCompile("(?m)^\\| `(\\w+)`"), docs)
	var inTable []string
	for _, d := range documented {
		if slices.Contains(params, d) {
			inTable = append(inTable, d)
		}
	}
	// The table lists smtpHost, smtpUsername, smtpPassword and mailFrom in one row.
	for _, m := range regexp.MustCompile("`(\\w+)`").FindAllStringSubmatch(docs, -1) {
		if slices.Contains(params, m[1]) && !slices.Contains(inTable, m[1]) {
			inTable = append(inTable, m[1])
		}
	}
	sort.Strings(inTable)
	if !slices.Equal(inTable, params) {
		t.Errorf("docs/deploy.md documents %v, the template has %v", inTable, params)
	}
	// The guard module is deployed on its own for more guarded groups.
	guardParams := names(regexp.MustCompile(`(?m)^param (\w+)`), read(t, "deploy/azure/guard.bicep"))
	for _, m := range regexp.MustCompile(`\b(\w+)=`).FindAllStringSubmatch(docs, -1) {
		if m[1] != "" && regexp.MustCompile(`^[a-z]`).MatchString(m[1]) && !slices.Contains(params, m[1]) && !slices.Contains(guardParams, m[1]) {
			t.Errorf("docs/deploy.md passes %s=, which neither template has a parameter for", m[1])
		}
	}

	known := names(regexp.MustCompile(`"(FUSEBOX_[A-Z_]+)"`), read(t, "internal/config/config.go"))
	for _, f := range []string{"deploy/azure/main.json", "deploy/azure/main.bicep"} {
		for _, v := range names(regexp.MustCompile(`'?"?(FUSEBOX_[A-Z_]+)`), read(t, f)) {
			if !slices.Contains(known, v) {
				t.Errorf("%s sets %s, which internal/config does not read", f, v)
			}
		}
	}
}

// A deployment with Easy Auth is never open: the template turns App
// Service Authentication on with sign-in required in the same deployment,
// lets by only the routes that authenticate on their own, and trusts the
// header only with that resource. (Without Easy Auth, Fusebox's own
// sign-in guards every page: TestEveryRouteRefusesStrangersAndViewersWhereItShould.)
func TestEasyAuthDeploymentsRequireSignIn(t *testing.T) {
	var tpl struct {
		Variables map[string]json.RawMessage `json:"variables"`
		Resources []struct {
			Type       string `json:"type"`
			Condition  string `json:"condition"`
			Properties struct {
				Platform         struct{ Enabled bool } `json:"platform"`
				GlobalValidation struct {
					RequireAuthentication       bool   `json:"requireAuthentication"`
					UnauthenticatedClientAction string `json:"unauthenticatedClientAction"`
					ExcludedPaths               string `json:"excludedPaths"`
				} `json:"globalValidation"`
			} `json:"properties"`
		} `json:"resources"`
	}
	raw := read(t, "deploy/azure/main.json")
	if err := json.Unmarshal([]byte(raw), &tpl); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, r := range tpl.Resources {
		if r.Type != "Microsoft.Web/sites/config" {
			continue
		}
		found = true
		g := r.Properties.GlobalValidation
		if !r.Properties.Platform.Enabled || !g.RequireAuthentication || g.UnauthenticatedClientAction == "AllowAnonymous" {
			t.Errorf("authsettingsV2 does not require sign-in: %+v", r.Properties)
		}
		if !regexp.MustCompile(`easyAuthClientId`).MatchString(r.Condition) {
			t.Errorf("authsettingsV2 is not deployed with the client id: condition %q", r.Condition)
		}
	}
	if !found {
		t.Fatal("main.json configures no App Service Authentication")
	}
	var open []string
	if err := json.Unmarshal(tpl.Variables["openPaths"], &open); err != nil {
		t.Fatal(err)
	}
	// Pages for people must never be let by.
	for _, p := range open {
		for _, page := range []string{"/", "/circuits", "/apps", "/channels", "/jobs", "/locks", "/audit", "/login"} {
			if p == page || p == page+"/*" {
				t.Errorf("App Service Authentication lets %s by", p)
			}
		}
	}
	// Routes that authenticate on their own must be let by, or function
	// hosts' exports are sent to sign-in and the breaker hears nothing.
	for _, machine := range []string{"/api/v1/*", "/ping/*", "/v1/*", "/otlp/*",
		"/opentelemetry.proto.collector.trace.v1.TraceService/Export", "/opentelemetry.proto.collector.logs.v1.LogsService/Export"} {
		if !slices.Contains(open, machine) {
			t.Errorf("App Service Authentication sends %s to sign-in", machine)
		}
	}
	if !regexp.MustCompile(`string\(not\(empty\(parameters\('easyAuthClientId'\)\)\)\)`).MatchString(raw) {
		t.Error("FUSEBOX_EASYAUTH_ENABLED is not tied to the client id")
	}
}

// TestTheGuardRoleIsWhatTheSwitchCalls: the custom role the template
// grants in a guarded group is exactly appservice.RoleActions (which
// TestEveryCallIsInTheGuardRole holds to the calls made), in main.json and
// in guard.bicep alike; and no role is granted on Fusebox's own group.
func TestTheGuardRoleIsWhatTheSwitchCalls(t *testing.T) {
	var tmpl struct {
		Resources []struct {
			Name       string `json:"name"`
			Condition  string `json:"condition"`
			Properties struct {
				Template struct {
					Variables struct {
						SwitchActions []string `json:"switchActions"`
					} `json:"variables"`
					Resources []struct {
						Type string `json:"type"`
					} `json:"resources"`
				} `json:"template"`
			} `json:"properties"`
		} `json:"resources"`
	}
	if err := json.Unmarshal([]byte(read(t, "deploy/azure/main.json")), &tmpl); err != nil {
		t.Fatal(err)
	}
	want := slices.Sorted(slices.Values(appservice.RoleActions))
	found := false
	for _, r := range tmpl.Resources {
		if r.Name != "[concat(parameters('name'), '-guard')]" {
			continue
		}
		found = true
		got := slices.Sorted(slices.Values(r.Properties.Template.Variables.SwitchActions))
		if !slices.Equal(got, want) {
			t.Errorf("main.json's guard role grants %v, want appservice.RoleActions %v", got, want)
		}
		if !strings.Contains(r.Condition, "not(variables('guardsOwnGroup'))") {
			t.Errorf("main.json guards Fusebox's own group too: condition %s", r.Condition)
		}
	}
	if !found {
		t.Fatal("main.json has no guard deployment")
	}
	bicep := names(regexp.MustCompile(`(?m)^  '(Microsoft\.[^']+)'$`), read(t, "deploy/azure/guard.bicep"))
	if !slices.Equal(bicep, want) {
		t.Errorf("guard.bicep's role grants %v, want %v", bicep, want)
	}
	if main := read(t, "deploy/azure/main.bicep"); !strings.Contains(main, "if (!empty(guardedResourceGroup) && !guardsOwnGroup)") {
		t.Error("main.bicep guards Fusebox's own group too")
	}
	if strings.Contains(read(t, "deploy/azure/main.json"), "de139f84-1756-47ae-9be6-808fbbe84772") {
		t.Error("main.json still grants Website Contributor")
	}
}

// main.json is kept by hand beside main.bicep (nobody needs the Bicep CLI
// to deploy): the two declare the same resources (type and API version,
// as many of each), set the same app settings and secrets, grant the same
// roles and give the same outputs. A change made to one alone fails here.
func TestTheJSONTemplateIsTheBicepOne(t *testing.T) {
	bicep, raw := read(t, "deploy/azure/main.bicep"), read(t, "deploy/azure/main.json")
	var tpl struct {
		Resources []struct {
			Type       string `json:"type"`
			APIVersion string `json:"apiVersion"`
		} `json:"resources"`
		Outputs map[string]json.RawMessage `json:"outputs"`
	}
	if err := json.Unmarshal([]byte(raw), &tpl); err != nil {
		t.Fatal(err)
	}
	var fromJSON, fromBicep []string
	for _, r := range tpl.Resources {
		fromJSON = append(fromJSON, r.Type+"@"+r.APIVersion)
	}
	for _, m := range regexp.MustCompile(`(?m)^resource \w+ '([^']+)'( existing)?`).FindAllStringSubmatch(bicep, -1) {
		if m[2] == "" { // an existing resource is only referred to
			fromBicep = append(fromBicep, m[1])
		}
	}
	for range regexp.MustCompile(`(?m)^module \w+ `).FindAllString(bicep, -1) {
		fromBicep = append(fromBicep, "Microsoft.Resources/deployments@2022-09-01")
	}
	sort.Strings(fromJSON)
	sort.Strings(fromBicep)
	if !slices.Equal(fromJSON, fromBicep) {
		t.Errorf("resources differ:\n main.bicep %v\n main.json  %v", fromBicep, fromJSON)
	}
	// Every occurrence counts: a setting added to the Container App and
	// forgotten on the web app differs.
	all := func(re, s string) []string {
		var out []string
		for _, m := range regexp.MustCompile(re).FindAllStringSubmatch(s, -1) {
			out = append(out, m[1])
		}
		sort.Strings(out)
		return out
	}
	for _, c := range []struct{ what, bicep, json string }{
		{"app settings", `name: '([A-Z][A-Z0-9_]+)'`, `"name": "([A-Z][A-Z0-9_]+)"`},
		{"secrets", `(?:name|secretRef): '([a-z]+(?:-[a-z]+)+)'`, `"(?:name|secretRef)": "([a-z]+(?:-[a-z]+)+)"`},
		{"role and resource GUIDs", `'([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})'`, `"([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})"`},
	} {
		if b, j := all(c.bicep, bicep), all(c.json, raw); len(b) == 0 || !slices.Equal(b, j) {
			t.Errorf("%s differ:\n main.bicep %v\n main.json  %v", c.what, b, j)
		}
	}
	var outputs []string
	for o := range tpl.Outputs {
		outputs = append(outputs, o)
	}
	sort.Strings(outputs)
	if b := all(`(?m)^output (\w+)`, bicep); !slices.Equal(b, outputs) {
		t.Errorf("outputs differ: main.bicep %v, main.json %v", b, outputs)
	}
	// What the deployment must carry (the issue that asked for them): logs
	// kept, a private registry pulled without a password, traces sent on.
	for _, want := range []string{"Microsoft.OperationalInsights/workspaces", "log-analytics", "acrUseManagedIdentityCreds", "registries", "OTEL_EXPORTER_OTLP_ENDPOINT"} {
		if !strings.Contains(bicep, want) || !strings.Contains(raw, want) {
			t.Errorf("the templates lack %s", want)
		}
	}
}
