package alerts_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fusebox/fusebox/internal/alerts"
	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/mailtest"
)

// pagerDuty is an Events API v2 receiver that checks what the API
// documents (developer.pagerduty.com, "Send an Alert Event"): a 32
// character routing key, an event_action, a dedup_key of at most 255
// characters and, on a trigger, a payload with a summary of at most 1,024
// characters, a source and one of the four severities. It keeps incidents
// by dedup key as PagerDuty does: a trigger while one is open joins it.
type pagerDuty struct {
	mu       sync.Mutex
	problems []string
	events   []string // event_action of each accepted event
	open     map[string]bool
	opened   int
	keys     map[string]bool
}

func (p *pagerDuty) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var ev struct {
		RoutingKey  string `json:"routing_key"`
		EventAction string `json:"event_action"`
		DedupKey    string `json:"dedup_key"`
		Payload     *struct {
			Summary, Source, Severity, Timestamp string
		} `json:"payload"`
	}
	bad := func(why string) {
		p.problems = append(p.problems, why)
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write([]byte(`{"status":"invalid event","message":"Event object is invalid"}`))
	}
	if r.Method != http.MethodPost || r.URL.Path != "/v2/enqueue" || r.Header.Get("Content-Type") != "application/json" {
		bad("not a JSON POST to /v2/enqueue")
		return
	}
	if err := json.NewDecoder(r.Body).Decode(&ev); err != nil {
		bad("not JSON")
		return
	}
	switch {
	case !regexp.MustCompile(`^[A-Za-z0-9]{32}$`).MatchString(ev.RoutingKey):
		bad("routing_key is not an integration key")
	case ev.DedupKey == "" || len(ev.DedupKey) > 255:
		bad("dedup_key missing or over 255")
	case ev.EventAction == "trigger" && (ev.Payload == nil || ev.Payload.Summary == "" || len(ev.Payload.Summary) > 1024 || ev.Payload.Source == "" ||
		!strings.Contains(" critical error warning info ", " "+ev.Payload.Severity+" ")):
		bad("a trigger's payload lacks a summary, source or severity")
	case ev.EventAction == "trigger":
		if _, err := time.Parse(time.RFC3339, ev.Payload.Timestamp); ev.Payload.Timestamp != "" && err != nil {
			bad("timestamp is not ISO 8601")
			return
		}
		if !p.open[ev.DedupKey] {
			p.opened++
		}
		p.open[ev.DedupKey], p.keys[ev.DedupKey] = true, true
	case ev.EventAction == "resolve":
		delete(p.open, ev.DedupKey)
		p.keys[ev.DedupKey] = true
	default:
		bad("event_action is not trigger or resolve")
		return
	}
	p.events = append(p.events, ev.EventAction)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusAccepted)
	_, _ = w.Write([]byte(`{"status":"success","message":"Event processed","dedup_key":"` + ev.DedupKey + `"}`))
}

// opsgenie is an Alert API receiver that checks its documented requests:
// "GenieKey <key>" authorisation, a create with a message of at most 130
// characters, an alias of at most 512 and a priority P1 to P5, and a close
// by alias. Creating with the alias of an open alert joins it. Under
// prefix it is Jira Service Management's operations integration API,
// which takes the same requests (/jsm/ops/integration/v2/alerts...).
type opsgenie struct {
	mu       sync.Mutex
	prefix   string
	key      string
	problems []string
	requests []string
	open     map[string]bool
	opened   int
}

func (o *opsgenie) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	o.mu.Lock()
	defer o.mu.Unlock()
	bad := func(status int, why string) {
		o.problems = append(o.problems, why)
		w.WriteHeader(status)
	}
	if r.Header.Get("Authorization") != "GenieKey "+o.key {
		bad(http.StatusUnauthorized, "no GenieKey authorisation")
		return
	}
	path, ok := strings.CutPrefix(r.URL.Path, o.prefix)
	if !ok {
		bad(http.StatusNotFound, "a request outside "+o.prefix+": "+r.URL.Path)
		return
	}
	switch {
	case r.Method == http.MethodPost && path == "/v2/alerts":
		var a struct{ Message, Alias, Priority, Source string }
		if err := json.NewDecoder(r.Body).Decode(&a); err != nil || a.Message == "" || len([]rune(a.Message)) > 130 || a.Alias == "" || len(a.Alias) > 512 ||
			!regexp.MustCompile(`^P[1-5]$`).MatchString(a.Priority) {
			bad(http.StatusUnprocessableEntity, "a create lacks a message, alias or priority")
			return
		}
		if !o.open[a.Alias] {
			o.opened++
		}
		o.open[a.Alias] = true
		o.requests = append(o.requests, "create "+a.Alias+" "+a.Priority)
	case r.Method == http.MethodPost && strings.HasPrefix(path, "/v2/alerts/") && strings.HasSuffix(path, "/close") &&
		r.URL.Query().Get("identifierType") == "alias":
		alias := strings.TrimSuffix(strings.TrimPrefix(path, "/v2/alerts/"), "/close")
		delete(o.open, alias)
		o.requests = append(o.requests, "close "+alias)
	default:
		bad(http.StatusNotFound, "unknown request "+r.Method+" "+r.URL.String())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusAccepted)
	_, _ = w.Write([]byte(`{"result":"Request will be processed","took":0.01,"requestId":"43a29c5c-3dbf-4fa4-9c26-f4f71023e120"}`))
}

// An episode opens one incident in PagerDuty and one alert in Opsgenie
// (or Jira Service Management's operations, its successor, at its own
// path); its escalation updates them (no second incident); the resume
// resolves them; the next trip opens new ones.
func TestAnEpisodeIsOneIncidentOnCall(t *testing.T) {
	for name, prefix := range map[string]string{"Opsgenie": "", "Jira Service Management": strings.TrimPrefix(alerts.JSMOpsEndpoint, "https://api.atlassian.com")} {
		t.Run(name, func(t *testing.T) { anEpisodeIsOneIncidentOnCall(t, prefix) })
	}
}

func anEpisodeIsOneIncidentOnCall(t *testing.T, prefix string) {
	r := newRig(t)
	pd := &pagerDuty{open: map[string]bool{}, keys: map[string]bool{}}
	og := &opsgenie{prefix: prefix, key: "0f2c6a1e-7d1b-4c59-9a55-0d6c1e2b7a01", open: map[string]bool{}}
	pdSrv, ogSrv := httptest.NewServer(pd), httptest.NewServer(og)
	t.Cleanup(pdSrv.Close)
	t.Cleanup(ogSrv.Close)
	for _, ch := range []alerts.Channel{
		{ID: "pd", Name: "Orders on call", Kind: alerts.ChannelPagerDuty, URL: pdSrv.URL + "/v2/enqueue", Secret: "R0123456789abcdefABCDEF012345678"},
		{ID: "og", Name: "Orders in Opsgenie", Kind: alerts.ChannelOpsgenie, URL: ogSrv.URL + prefix, Secret: og.key},
	} {
		if err := ch.Validate(true); err != nil {
			t.Fatalf("channel %s: %v", ch.ID, err)
		}
		if err := r.store.Channels.Create(t.Context(), ch); err != nil {
			t.Fatal(err)
		}
	}
	c, err := r.store.Circuits.Get(t.Context(), "orders", "Process")
	if err != nil {
		t.Fatal(err)
	}
	c.Channels, c.Escalate = []string{"pd"}, circuit.Escalation{After: time.Hour, To: []string{"og"}}
	if err := r.store.Circuits.UpdateSettings(t.Context(), c); err != nil {
		t.Fatal(err)
	}
	smtp := mailtest.Start(t)
	pass := passer(t, r.channelSender(smtp.Port, ""))

	pass() // the trip: PagerDuty
	r.clock.Advance(time.Hour)
	pass() // unacknowledged for an hour: escalated to Opsgenie
	r.clock.Advance(3 * time.Hour)
	pass() // the first reminder: PagerDuty again
	c, _ = r.store.Circuits.Get(t.Context(), "orders", "Process")
	c.State, c.Episode, c.ChangedAt, c.Reason = circuit.Closed, c.Episode+1, r.clock.Now(), "resumed by alice"
	if err := r.store.Circuits.Put(t.Context(), c); err != nil {
		t.Fatal(err)
	}
	pass() // resumed: both resolved
	og.mu.Lock()
	ogRequests := append([]string(nil), og.requests...)
	og.mu.Unlock()

	r.clock.Advance(time.Minute)
	c.State, c.Episode, c.ChangedAt, c.Reason = circuit.Open, c.Episode+1, r.clock.Now(), "120 failures in 30s (threshold 100)"
	if err := r.store.Circuits.Put(t.Context(), c); err != nil {
		t.Fatal(err)
	}
	pass() // tripped again: a new incident

	pd.mu.Lock()
	if len(pd.problems) > 0 || strings.Join(pd.events, ",") != "trigger,trigger,resolve,trigger" || pd.opened != 2 || len(pd.open) != 1 || len(pd.keys) != 1 {
		t.Errorf("PagerDuty: events %v, %d incidents opened, %d open, keys %v, problems %v; want trigger, trigger, resolve of one incident, then a new one",
			pd.events, pd.opened, len(pd.open), pd.keys, pd.problems)
	}
	pd.mu.Unlock()
	og.mu.Lock()
	if len(og.problems) > 0 || len(ogRequests) != 2 || !strings.HasPrefix(ogRequests[0], "create ") || !strings.HasSuffix(ogRequests[0], " P1") ||
		ogRequests[1] != "close "+strings.Fields(ogRequests[0])[1] {
		t.Errorf("Opsgenie: requests %v, problems %v; want the escalation's create (P1), then its close", ogRequests, og.problems)
	}
	og.mu.Unlock()
}
