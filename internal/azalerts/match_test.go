package azalerts_test

import (
	"os"
	"strings"
	"testing"

	"github.com/fusebox/fusebox/internal/azalerts"
)

// The samples Microsoft publishes (testdata/published, unchanged) carry no
// alertRuleID; what they say of their rule is read from alertId, alertRule
// and a metric alert's originAlertId. A placeholder subscription in alertId
// is none: the metric alert's originAlertId names it.
func TestThePublishedSamplesSayWhatTheirRuleIs(t *testing.T) {
	for file, want := range map[string]azalerts.RuleRef{
		"alerts-common-schema-sample.json": {Subscription: "3f2d4487-b0fc-4125-8bd5-7ad17384221e", ResourceGroup: "PipeLineAlertRG", Type: "metricAlerts", Name: "WCUS-R2-Gen2"},
		"test-action-metric-static.json":   {Subscription: "11111111-1111-1111-1111-111111111111", ResourceGroup: "test-RG", Type: "metricAlerts", Name: "test-metricAlertRule"},
		// Its originAlertId is no metric alert's: only the subscription
		// and the name are said.
		"test-action-activity-log-administrative.json": {Subscription: "11111111-1111-1111-1111-111111111111", Name: "test-activityLogAlertRule"},
	} {
		a := published(t, file)
		if a.RuleID != "" || a.Ref != want {
			t.Errorf("%s: rule id %q, says %+v; want no rule id and %+v", file, a.RuleID, a.Ref, want)
		}
	}
}

// published is a sample as Microsoft publishes it, read.
func published(t *testing.T, file string) azalerts.Alert {
	t.Helper()
	body, err := os.ReadFile("testdata/published/" + file)
	if err != nil {
		t.Fatal(err)
	}
	a, err := azalerts.Parse(body)
	if err != nil {
		t.Fatalf("%s as published: %v", file, err)
	}
	return a
}

// An originAlertId is read only when it is a metric alert's, of the rule
// the alert names, in the subscription its alertId names: a resource group
// or rule name with "_" in it still reads; anything else says no more than
// alertId and alertRule.
func TestAnOriginAlertIDIsReadOnlyWhenItIsAMetricAlertsOfThisRule(t *testing.T) {
	const sub = "7e2c1f4a-5b6d-4e8f-9a0b-1c2d3e4f5a6b"
	for name, tc := range map[string]struct {
		alertID, rule, origin string
		want                  azalerts.RuleRef
	}{
		"underscores in the group and the name": {"/subscriptions/" + sub + "/providers/Microsoft.AlertsManagement/alerts/x", "db_dtu_high",
			sub + "_rg_data_eu_microsoft.insights_metricAlerts_db_dtu_high_-42", azalerts.RuleRef{Subscription: sub, ResourceGroup: "rg_data_eu", Type: "metricAlerts", Name: "db_dtu_high"}},
		"another rule's": {"/subscriptions/" + sub + "/providers/Microsoft.AlertsManagement/alerts/x", "db-dtu-high",
			sub + "_rg-data_microsoft.insights_metricAlerts_db-cpu-high_7", azalerts.RuleRef{Subscription: sub, Name: "db-dtu-high"}},
		"another subscription's": {"/subscriptions/" + sub + "/providers/Microsoft.AlertsManagement/alerts/x", "db-dtu-high",
			"00000000-0000-0000-0000-000000000000_rg-data_microsoft.insights_metricAlerts_db-dtu-high_7", azalerts.RuleRef{Subscription: sub, Name: "db-dtu-high"}},
		"no number at its end": {"/subscriptions/" + sub + "/providers/Microsoft.AlertsManagement/alerts/x", "db-dtu-high",
			sub + "_rg-data_microsoft.insights_metricAlerts_db-dtu-high_x", azalerts.RuleRef{Subscription: sub, Name: "db-dtu-high"}},
		"the separator twice": {"/subscriptions/" + sub + "/providers/Microsoft.AlertsManagement/alerts/x", "r",
			sub + "_a_microsoft.insights_metricAlerts_b_microsoft.insights_metricAlerts_r_1", azalerts.RuleRef{Subscription: sub, Name: "r"}},
		"no subscription in the alert id": {"/providers/Microsoft.AlertsManagement/alerts/x", "db-dtu-high",
			"log-search-123", azalerts.RuleRef{Name: "db-dtu-high"}},
	} {
		body := `{"schemaId": "azureMonitorCommonAlertSchema", "data": {"essentials": {"alertId": "` + tc.alertID + `", "alertRule": "` + tc.rule +
			`", "originAlertId": "` + tc.origin + `", "monitorCondition": "Fired", "firedDateTime": "2026-12-07T02:01:17Z"}}}`
		a, err := azalerts.Parse([]byte(body))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if a.Ref != tc.want {
			t.Errorf("%s: read %+v, want %+v", name, a.Ref, tc.want)
		}
	}
}

// Which named rule an alert is about: its alertRuleID when it carries one;
// else the one rule that fits its name, subscription and (metric alerts)
// resource group and type, in any case; none, or two, match nothing, and
// the note says why.
func TestAnAlertMatchesOneRuleOrSaysWhyNone(t *testing.T) {
	metric := published(t, "test-action-metric-static.json")
	activity := published(t, "test-action-activity-log-administrative.json")
	const sub = "/subscriptions/11111111-1111-1111-1111-111111111111"
	metricRule := sub + "/resourceGroups/test-RG/providers/Microsoft.Insights/metricAlerts/test-metricAlertRule"
	activityRule := sub + "/resourceGroups/test-RG/providers/microsoft.insights/activityLogAlerts/test-activityLogAlertRule"
	withID := metric
	withID.RuleID = strings.ToLower(metricRule)
	for name, tc := range map[string]struct {
		a          azalerts.Alert
		named      []string
		rule, says string
	}{
		"by name, subscription, group and type": {metric, []string{
			metricRule,
			strings.Replace(metricRule, "test-RG", "other-RG", 1),                 // another group
			strings.Replace(metricRule, "metricAlerts", "scheduledQueryRules", 1), // another type
			strings.Replace(metricRule, "11111111-1111", "22222222-1111", 1),      // another subscription
			strings.ToUpper(metricRule),                                           // the same, as spelled elsewhere
		}, metricRule, "carries no rule id: matched " + metricRule + " by its name, subscription, resource group and type"},
		"by name and subscription": {activity, []string{activityRule, strings.Replace(activityRule, "11111111-1111", "22222222-1111", 1)},
			activityRule, "carries no rule id: matched " + activityRule + " by its name and subscription"},
		"two rules fit": {activity, []string{activityRule, strings.Replace(activityRule, "test-RG", "other-RG", 1)},
			"", "matches more than one rule: " + strings.Replace(activityRule, "test-RG", "other-RG", 1) + ", " + activityRule + "; acted on none"},
		"no rule of that name": {metric, []string{strings.Replace(metricRule, "test-metricAlertRule", "test-metricAlertRule-2", 1)},
			"", `carries no rule id and no rule of that name: no circuit or downstream names a rule "test-metricAlertRule" in subscription 11111111-1111-1111-1111-111111111111, resource group test-RG, of type metricAlerts`},
		"its rule id, named": {withID, []string{metricRule}, withID.RuleID, "matched by its rule id (alertRuleID)"},
		"its rule id, named nowhere": {withID, []string{strings.Replace(metricRule, "test-RG", "other-RG", 1)},
			"", "names no circuit or downstream"},
	} {
		m := azalerts.Match(tc.a, tc.named)
		if m.Rule != tc.rule || !strings.HasPrefix(m.Note, tc.says) {
			t.Errorf("%s: matched %q saying %q; want %q saying %q", name, m.Rule, m.Note, tc.rule, tc.says)
		}
	}
}
