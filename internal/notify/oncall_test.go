package notify_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fusebox/fusebox/internal/alerts"
	"github.com/fusebox/fusebox/internal/egress"
	"github.com/fusebox/fusebox/internal/notify"
)

// What each kind of notice does to its incident, and under which name.
func TestNoticesTriggerAndResolveTheirIncidents(t *testing.T) {
	at := time.Date(2026, 12, 5, 3, 0, 0, 0, time.UTC)
	long := strings.Repeat("x", 300)
	for _, tc := range []struct {
		n                 alerts.Notice
		action, severity  string
		dedup, opsgenieTo string
	}{
		{alerts.Notice{Type: "job.missing", Title: "Nightly summary is missing", Incident: "fusebox/job/5f0c"}, "trigger", "error", "fusebox/job/5f0c", "/v2/alerts"},
		{alerts.Notice{Type: "job.recovered", Title: "Nightly summary runs again", Incident: "fusebox/job/5f0c"}, "resolve", "", "fusebox/job/5f0c", "/v2/alerts/fusebox:job:5f0c/close?identifierType=alias"},
		{alerts.Notice{Type: "circuit.held", Title: "Guardrail held a trip", Incident: "fusebox/held/orders/Process/ab/4"}, "trigger", "error", "fusebox/held/orders/Process/ab/4", "/v2/alerts"},
		{alerts.Notice{Type: "circuit.escalated", Title: "Escalated", Incident: "fusebox/circuit/orders/Process/ab"}, "trigger", "critical", "fusebox/circuit/orders/Process/ab", "/v2/alerts"},
		{alerts.Notice{Type: "circuit.opened", Title: "Opened", Incident: "fusebox/circuit/" + long}, "trigger", "critical", "", "/v2/alerts"},
	} {
		tc.n.At = at
		ev := notify.NewPagerDutyEvent(tc.n, "R0123456789abcdefABCDEF012345678")
		if ev.EventAction != tc.action || (tc.dedup != "" && ev.DedupKey != tc.dedup) || len(ev.DedupKey) > 255 {
			t.Errorf("%s: %s %q; want %s %q (at most 255 bytes)", tc.n.Type, ev.EventAction, ev.DedupKey, tc.action, tc.dedup)
		}
		if tc.action == "trigger" && (ev.Payload == nil || ev.Payload.Severity != tc.severity || ev.Payload.Summary != tc.n.Title) {
			t.Errorf("%s: payload %+v; want severity %s", tc.n.Type, ev.Payload, tc.severity)
		}
		if tc.action == "resolve" && ev.Payload != nil {
			t.Errorf("%s: a resolve carries a payload", tc.n.Type)
		}
		if path, _ := notify.OpsgenieRequest(tc.n); path != tc.opsgenieTo {
			t.Errorf("%s: Opsgenie %s; want %s", tc.n.Type, path, tc.opsgenieTo)
		}
	}
}

// On-call channels post only to their services' endpoints, with a key of
// the service's form.
func TestOnCallChannelsNeedTheirServicesEndpointAndKey(t *testing.T) {
	for _, tc := range []struct {
		ch    alerts.Channel
		field string
	}{
		{alerts.Channel{ID: "pd", Name: "PD", Kind: alerts.ChannelPagerDuty, Secret: "R0123456789abcdefABCDEF012345678"}.WithDefaults(), ""},
		{alerts.Channel{ID: "pd", Name: "PD", Kind: alerts.ChannelPagerDuty, URL: "https://events.eu.pagerduty.com/v2/enqueue", Secret: "R0123456789abcdefABCDEF012345678"}, ""},
		{alerts.Channel{ID: "pd", Name: "PD", Kind: alerts.ChannelPagerDuty, URL: "https://evil.example/v2/enqueue", Secret: "R0123456789abcdefABCDEF012345678"}, "url"},
		{alerts.Channel{ID: "pd", Name: "PD", Kind: alerts.ChannelPagerDuty, Secret: "short"}.WithDefaults(), "key"},
		{alerts.Channel{ID: "og", Name: "OG", Kind: alerts.ChannelOpsgenie, Secret: "0f2c6a1e-7d1b-4c59-9a55-0d6c1e2b7a01"}.WithDefaults(), ""},
		{alerts.Channel{ID: "og", Name: "OG", Kind: alerts.ChannelOpsgenie, URL: "http://10.0.0.4", Secret: "0f2c6a1e-7d1b-4c59-9a55-0d6c1e2b7a01"}, "url"},
		{alerts.Channel{ID: "jsm", Name: "JSM", Kind: alerts.ChannelOpsgenie, URL: "https://api.atlassian.com/jsm/ops/integration", Secret: "0f2c6a1e-7d1b-4c59-9a55-0d6c1e2b7a01"}, ""},
		{alerts.Channel{ID: "jsm", Name: "JSM", Kind: alerts.ChannelOpsgenie, URL: "https://api.atlassian.com/jsm/ops/api/other", Secret: "0f2c6a1e-7d1b-4c59-9a55-0d6c1e2b7a01"}, "url"},
		{alerts.Channel{ID: "og", Name: "OG", Kind: alerts.ChannelOpsgenie, Secret: "not-a-key"}.WithDefaults(), "key"},
	} {
		err := tc.ch.Validate(false)
		switch {
		case tc.field == "" && err != nil:
			t.Errorf("%s %s: refused: %v", tc.ch.Kind, tc.ch.URL, err)
		case tc.field != "" && (err == nil || !strings.Contains(err.Error(), tc.field)):
			t.Errorf("%s %s: %v; want a problem with %s", tc.ch.Kind, tc.ch.URL, err, tc.field)
		}
	}
}

// "Send a test" opens an incident of its own and resolves it at once.
func TestATestLeavesNoIncidentOpen(t *testing.T) {
	var mu sync.Mutex
	var got []notify.PagerDutyEvent
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var ev notify.PagerDutyEvent
		_ = json.NewDecoder(r.Body).Decode(&ev)
		mu.Lock()
		got = append(got, ev)
		mu.Unlock()
		w.WriteHeader(http.StatusAccepted)
	}))
	defer srv.Close()
	ch := alerts.Channel{ID: "pd", Name: "PD", Kind: alerts.ChannelPagerDuty, URL: srv.URL + "/v2/enqueue", Secret: "R0123456789abcdefABCDEF012345678"}
	tester := notify.Tester{Poster: notify.Poster{Egress: egress.Policy{AllowLoopback: true}}, FuseboxURL: "https://fusebox.example", Now: time.Now}
	if err := tester.Test(t.Context(), ch); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 2 || got[0].EventAction != "trigger" || got[1].EventAction != "resolve" || got[0].DedupKey != got[1].DedupKey || !strings.HasPrefix(got[0].DedupKey, "fusebox/test/pd/") {
		t.Errorf("a test sent %+v; want a trigger and a resolve of one test incident", got)
	}
}
