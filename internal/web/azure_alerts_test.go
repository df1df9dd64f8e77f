package web_test

import (
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/fusebox/fusebox/internal/apptest"
)

const alertsSecret = "0123456789abcdef0123456789abcdef-alerts"

func postAlert(t *testing.T, base, secret, body string) response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, base+"/hooks/azure-monitor/"+secret, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	return newBrowser(t, base).do(req)
}

// An action group's webhook in the common alert schema is taken behind the
// secret in its path, kept once however often it is sent again, refused
// with a reason when it is not such an alert, and shown to admins with
// its rule, condition and resource; a wrong secret answers as a path that
// names nothing, and without a secret configured no path takes alerts.
func TestAzureMonitorAlertsAreTakenOnceAndShown(t *testing.T) {
	t.Parallel()
	srv := apptest.Start(t, map[string]string{"FUSEBOX_AZURE_ALERTS_SECRET": alertsSecret})
	// The samples fired on 2026-12-07: moved to the test clock's day.
	today := srv.Clock.Now().UTC().Format("2006-01-02")
	read := func(name string) []byte {
		b, err := os.ReadFile("../azalerts/testdata/" + name)
		if err != nil {
			t.Fatal(err)
		}
		return []byte(strings.ReplaceAll(string(b), "2026-12-07T", today+"T"))
	}
	metric, resolved := read("metric.json"), read("logsearch.json")
	wantStatus(t, postAlert(t, srv.URL, alertsSecret, string(metric)), http.StatusAccepted)
	again := postAlert(t, srv.URL, alertsSecret, string(metric))
	if again.StatusCode != http.StatusOK || !strings.Contains(again.body, "received already") {
		t.Errorf("the same alert sent again: %d %s", again.StatusCode, again.body)
	}
	wantStatus(t, postAlert(t, srv.URL, alertsSecret, string(resolved)), http.StatusAccepted)
	bad := postAlert(t, srv.URL, alertsSecret, `{"schemaId": "AzureMonitorMetricAlert", "data": {}}`)
	if bad.StatusCode != http.StatusBadRequest || !strings.Contains(bad.body, "Enable the common alert schema") {
		t.Errorf("an alert in the old schema: %d %s", bad.StatusCode, bad.body)
	}
	old := postAlert(t, srv.URL, alertsSecret, strings.ReplaceAll(string(metric), today, "2025-01-01"))
	if old.StatusCode != http.StatusBadRequest || !strings.Contains(old.body, "not within the last 31 days") {
		t.Errorf("an alert that fired long ago: %d %s", old.StatusCode, old.body)
	}
	wrong := postAlert(t, srv.URL, strings.Replace(alertsSecret, "0", "1", 1), string(metric))
	none := postAlert(t, srv.URL, "x", string(metric))
	if wrong.StatusCode != http.StatusNotFound || none.StatusCode != http.StatusNotFound {
		t.Errorf("a wrong secret: %d, no secret: %d; want 404 both", wrong.StatusCode, none.StatusCode)
	}

	admin := newBrowser(t, srv.URL)
	admin.signIn("olivia")
	page := admin.get("/alerts")
	wantStatus(t, page, http.StatusOK)
	if strings.Count(page.body, `data-testid="alert-row"`) != 2 || !strings.Contains(page.body, "inventory-db-dtu-high") ||
		!strings.Contains(page.body, "orders-store-timeouts") || !strings.Contains(page.body, "/databases/inventory") {
		t.Errorf("the Alerts page does not show the two alerts, once each:\n%.3000s", page.body)
	}
	viewer := newBrowser(t, srv.URL)
	viewer.signIn("victor")
	wantStatus(t, viewer.get("/alerts"), http.StatusForbidden)

	off := apptest.Start(t, nil)
	if r := postAlert(t, off.URL, "x", string(metric)); r.StatusCode != http.StatusNotFound {
		t.Errorf("with no secret configured: %d", r.StatusCode)
	}
	if r := postAlert(t, off.URL, alertsSecret, string(metric)); r.StatusCode != http.StatusNotFound {
		t.Errorf("with no secret configured, a guessed one: %d", r.StatusCode)
	}
}
