package azalerts_test

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/fusebox/fusebox/internal/azalerts"
)

// The common alert schema's four kinds of alert, as action groups send
// them (the shapes of Microsoft's documented samples), read to the same
// essentials.
func TestTheFourKindsOfAlertAreRead(t *testing.T) {
	for file, want := range map[string]azalerts.Alert{
		"metric.json": {Rule: "inventory-db-dtu-high", Condition: azalerts.Fired, Signal: "Metric", Severity: "Sev2", Service: "Platform",
			RuleID: "/subscriptions/7e2c1f4a-5b6d-4e8f-9a0b-1c2d3e4f5a6b/resourceGroups/rg-data/providers/microsoft.insights/metricAlerts/inventory-db-dtu-high",
			Fired:  time.Date(2026, 12, 7, 2, 1, 17, 441290800, time.UTC)},
		"logsearch.json": {Rule: "orders-store-timeouts", Condition: azalerts.Resolved, Signal: "Log", Severity: "Sev1", Service: "Log Alerts V2",
			RuleID: "/subscriptions/7e2c1f4a-5b6d-4e8f-9a0b-1c2d3e4f5a6b/resourceGroups/rg-orders/providers/microsoft.insights/scheduledqueryrules/orders-store-timeouts",
			Fired:  time.Date(2026, 12, 7, 1, 40, 2, 100000000, time.UTC), Resolved: time.Date(2026, 12, 7, 2, 10, 44, 902100000, time.UTC)},
		"activitylog.json": {Rule: "orders-store-deleted", Condition: azalerts.Fired, Signal: "Activity Log", Severity: "Sev4", Service: "Activity Log - Administrative",
			Fired: time.Date(2026, 12, 7, 1, 12, 9, 33000000, time.UTC)},
		"resourcehealth.json": {Rule: "inventory-db-health", Condition: azalerts.Fired, Signal: "Activity Log", Severity: "Sev4", Service: "Resource Health",
			Fired: time.Date(2026, 12, 7, 1, 58, 31, 500000000, time.UTC)},
	} {
		body, err := os.ReadFile("testdata/" + file)
		if err != nil {
			t.Fatal(err)
		}
		a, err := azalerts.Parse(body)
		if err != nil {
			t.Errorf("%s: %v", file, err)
			continue
		}
		if a.Rule != want.Rule || a.RuleID != want.RuleID || a.Condition != want.Condition || a.Signal != want.Signal || a.Severity != want.Severity ||
			a.Service != want.Service || !a.Fired.Equal(want.Fired) || !a.Resolved.Equal(want.Resolved) || len(a.Targets) != 1 ||
			!strings.HasPrefix(a.ID, "/subscriptions/") {
			t.Errorf("%s: read %+v", file, a)
		}
	}
}

// A delivery sent again has the same key; the same alert resolved has
// another.
func TestAKeyIsTheAlertAndItsCondition(t *testing.T) {
	body, _ := os.ReadFile("testdata/metric.json")
	fired, _ := azalerts.Parse(body)
	again, _ := azalerts.Parse(body)
	resolved := strings.Replace(string(body), `"monitorCondition": "Fired"`, `"monitorCondition": "Resolved", "resolvedDateTime": "2026-12-07T02:30:00Z"`, 1)
	r, err := azalerts.Parse([]byte(resolved))
	if err != nil {
		t.Fatal(err)
	}
	if fired.Key() != again.Key() || fired.Key() == r.Key() || len(fired.Key()) != 32 {
		t.Errorf("keys: %s %s %s", fired.Key(), again.Key(), r.Key())
	}
}

// What is not an alert Fusebox takes is refused, saying why.
func TestWhatIsNotAnAlertIsRefusedSayingWhy(t *testing.T) {
	good, _ := os.ReadFile("testdata/metric.json")
	swap := func(old, new string) string { return strings.Replace(string(good), old, new, 1) }
	for name, tc := range map[string]struct{ body, says string }{
		"not JSON":                 {"<alert/>", "not JSON"},
		"the old schema":           {`{"schemaId": "AzureMonitorMetricAlert", "data": {}}`, "common alert schema"},
		"no essentials":            {`{"schemaId": "azureMonitorCommonAlertSchema", "data": {}}`, "essentials is missing"},
		"no alert id":              {swap(`"alertId": "/subscriptions/7e2c`, `"alertId": "", "x": "/subscriptions/7e2c`), "alertId"},
		"a condition unknown":      {swap(`"monitorCondition": "Fired"`, `"monitorCondition": "Exploded"`), "monitorCondition"},
		"a rule id not ARM's":      {swap(`"alertRuleID": "/subscriptions/`, `"alertRuleID": "https://evil/`), "alertRuleID"},
		"a rule name on two lines": {swap(`"alertRule": "inventory-db-dtu-high"`, `"alertRule": "inventory\nrm -rf"`), "alertRule"},
		"no fired time":            {swap(`"firedDateTime": "2026-12-07T02:01:17.4412908Z"`, `"firedDateTime": "yesterday"`), "firedDateTime"},
		"resolved, no time":        {swap(`"monitorCondition": "Fired"`, `"monitorCondition": "Resolved"`), "resolvedDateTime"},
		"too many targets":         {swap(`"alertTargetIDs": [`, `"alertTargetIDs": [`+strings.Repeat(`"/subscriptions/x",`, 40)), "alertTargetIDs"},
		"too large":                {`{"schemaId": "` + strings.Repeat("a", azalerts.MaxBody) + `"}`, "at most"},
	} {
		_, err := azalerts.Parse([]byte(tc.body))
		if err == nil || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%s: %v, want a refusal saying %q", name, err, tc.says)
		} else if _, ok := err.(azalerts.Error); !ok {
			t.Errorf("%s: %T, want azalerts.Error", name, err)
		}
	}
	long := swap(`"description": "DTU above 95 % for 5 minutes"`, `"description": "`+strings.Repeat("é", 1000)+`"`)
	a, err := azalerts.Parse([]byte(long))
	if err != nil || len(a.Description) > azalerts.MaxDescription || !strings.HasPrefix(a.Description, "éé") {
		t.Errorf("a long description: %v, %d bytes kept", err, len(a.Description))
	}
}
