package web_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	logspb "go.opentelemetry.io/proto/otlp/logs/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	"google.golang.org/protobuf/proto"

	"github.com/fusebox/fusebox/internal/apptest"
	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/demo"
	"github.com/fusebox/fusebox/internal/testenv"
)

// The circuit page says what failed: the reports' error texts grouped by
// what they say (the timeouts with other numbers and keys are one group),
// most failures first, with first and last seen and the instance.
func TestTheCircuitPageSaysWhatFailed(t *testing.T) {
	t.Parallel()
	srv, _ := apptest.Seeded(t)
	if err := srv.App.Store.Circuits.Put(t.Context(), circuit.Circuit{AppID: demo.AppID, Function: "ScoreLeads", Settings: circuit.Settings{Threshold: 1000, Window: time.Minute}, State: circuit.Closed}); err != nil {
		t.Fatal(err)
	}
	now := srv.Clock.Now()
	var items []string
	for i, msg := range []string{"Timeout after 30 s reading 'leads/42'", "Timeout after 12 s reading 'leads/7'", "Timeout after 9 s reading 'leads/1'", "Connection refused by 10.0.0.4:1433", "Timeout after 30 s reading 'leads/3'"} {
		items = append(items, fmt.Sprintf(`{"function":"ScoreLeads","at":%q,"error":%q}`, now.Add(-time.Duration(i+1)*time.Second).Format(time.RFC3339), msg))
	}
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/api/v1/failures", strings.NewReader(`{"failures":[`+strings.Join(items, ",")+`]}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+demo.Key)
	req.Header.Set("X-Fusebox-Instance", "vm-7")
	wantStatus(t, newBrowser(t, srv.URL).do(req), http.StatusAccepted)

	b := newBrowser(t, srv.URL)
	b.signIn("victor")
	page := b.get("/circuits/" + demo.AppID + "/ScoreLeads")
	wantStatus(t, page, http.StatusOK)
	groups := strings.Split(page.body, `data-testid="error-group"`)[1:]
	if len(groups) != 2 {
		t.Fatalf("%d error groups, want the timeouts and the refused connection:\n%s", len(groups), page.body)
	}
	if g := groups[0]; !strings.Contains(g, "Timeout after 30 s reading &#39;leads/42&#39;") || !strings.Contains(g, "<td>4</td>") || !strings.Contains(g, "vm-7") {
		t.Errorf("the timeouts' group: %s", g)
	}
	if g := groups[1]; !strings.Contains(g, "Connection refused") || !strings.Contains(g, "<td>1</td>") {
		t.Errorf("the refused connection's group: %s", g)
	}
	api := b.get("/api/v1/circuits/" + demo.AppID + "/ScoreLeads")
	wantStatus(t, api, http.StatusOK)
	var got struct {
		Errors []struct {
			Example   string   `json:"example"`
			Count     int      `json:"count"`
			Instances []string `json:"instances"`
		} `json:"errors"`
	}
	if err := json.Unmarshal([]byte(api.body), &got); err != nil || len(got.Errors) != 2 || got.Errors[0].Count != 4 || got.Errors[0].Instances[0] != "vm-7" {
		t.Errorf("the API's errors: %+v (%v)\n%s", got.Errors, err, api.body)
	}
}

// Before a trip by hand the confirmation says what switching costs: the
// demo's Functions host restarts, and every other function with it (a
// local app's functions cannot be listed; an ARM app's are named, as
// TestSwitchCostSaysWhatRestarts shows).
func TestATripSaysWhatSwitchingCosts(t *testing.T) {
	t.Parallel()
	srv, _ := apptest.Seeded(t)
	b := newBrowser(t, srv.URL)
	b.signIn("olivia")
	page := b.get("/circuits/" + demo.AppID + "/ProcessOrders/trip")
	wantStatus(t, page, http.StatusOK)
	i := strings.Index(page.body, `data-testid="switch-cost"`)
	if i < 0 {
		t.Fatalf("the trip's confirmation does not say what switching costs:\n%s", page.body)
	}
	cost := page.body[i : i+strings.Index(page.body[i:], "</p>")]
	if !strings.Contains(cost, "Functions host restarts: every other function of the app restarts with it") || !strings.Contains(cost, "at least once") {
		t.Errorf("cost: %s", cost)
	}
}

// The demo's open circuit tells one story: the 142 failures its reason
// names are the failures of its error groups, from the two demo host
// instances, and its flip log holds the three episodes its state counts.
func TestTheDemosOpenCircuitTellsOneStory(t *testing.T) {
	t.Parallel()
	srv, _ := apptest.SeededWithHistory(t)
	b := newBrowser(t, srv.URL)
	b.signIn("victor")
	page := b.get("/circuits/" + demo.AppID + "/SyncInventory")
	wantStatus(t, page, http.StatusOK)
	total := 0
	for _, g := range strings.Split(page.body, `data-testid="error-group"`)[1:] {
		var n int
		cells := strings.Split(g, "<td>")
		if len(cells) < 3 {
			t.Fatalf("an error group without cells: %s", g)
		}
		if _, err := fmt.Sscanf(cells[2], "%d", &n); err != nil {
			t.Fatalf("count of %s: %v", g, err)
		}
		total += n
		if !strings.Contains(g, "demo-host-1") && !strings.Contains(g, "demo-host-2") {
			t.Errorf("a group names neither demo host: %s", g)
		}
	}
	if total != 142 || !strings.Contains(page.body, "142 failures in 1m (threshold 50)") {
		t.Errorf("the error groups add up to %d, the reason says 142", total)
	}
	flips := page.body[strings.Index(page.body, `data-testid="flips"`):]
	if !strings.Contains(flips, "88 failures in 1m") || !strings.Contains(flips, "resumed by alice") || !strings.Contains(flips, "142 failures in 1m") {
		t.Errorf("the flip log does not hold the three episodes:\n%s", page.body)
	}
}

// An app that names its Application Insights resource (by Application
// ID, on its host page) gets its failures' sample traces linked to their
// transaction there: the item is the call that reported them (the
// traceparent's parent id). A value that is not a GUID is refused, so
// nothing else is ever written into the link.
func TestSampleTracesLinkToApplicationInsights(t *testing.T) {
	t.Parallel()
	srv, _ := apptest.Seeded(t)
	if err := srv.App.Store.Circuits.Put(t.Context(), circuit.Circuit{AppID: demo.AppID, Function: "ScoreLeads", Settings: circuit.Settings{Threshold: 1000, Window: time.Minute}, State: circuit.Closed}); err != nil {
		t.Fatal(err)
	}
	op := newBrowser(t, srv.URL)
	op.signIn("olivia")
	form := "/apps/" + demo.AppID + "/host/edit"
	post := func(v url.Values) response {
		t.Helper()
		v.Set("_csrf", op.csrf(form))
		return op.post(form, v)
	}
	if r := post(url.Values{"insights_app_id": {`0f3d9a2c"/><script>`}}); r.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(r.body, "Application ID") {
		t.Errorf("a value that is not a GUID: status %d, want 422 saying what it must be", r.StatusCode)
	}
	const appID = "0f3d9a2c-5b1e-4c7a-9d2e-3f4a5b6c7d8e"
	wantStatus(t, post(url.Values{"insights_app_id": {appID}}), http.StatusSeeOther)

	item := fmt.Sprintf(`{"failures":[{"function":"ScoreLeads","at":%q,"error":"Timeout after 30 s"}]}`, srv.Clock.Now().Add(-time.Second).Format(time.RFC3339))
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/api/v1/failures", strings.NewReader(item))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+demo.Key)
	req.Header.Set("traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
	wantStatus(t, newBrowser(t, srv.URL).do(req), http.StatusAccepted)

	page := op.get("/circuits/" + demo.AppID + "/ScoreLeads")
	wantTraceLinked(t, page.body, appID, "the sample trace does not link to its transaction")
}

// A failure that comes as the host's own span (zero code) keeps that
// span's trace: its group links to the request Application Insights keeps
// of the failed run, the span itself.
func TestAFailedSpanLinksToItsOwnTransaction(t *testing.T) {
	t.Parallel()
	srv, _ := apptest.Seeded(t)
	const appID = "0f3d9a2c-5b1e-4c7a-9d2e-3f4a5b6c7d8e"
	nameInsights(t, srv, appID)
	export := hostSpans("func-orders-demo", srv.Clock.Now().Add(-time.Second), 1)
	span := export.ResourceSpans[0].ScopeSpans[0].Spans[0]
	span.TraceId, span.SpanId = linkedTrace, linkedSpan
	span.Status.Message = "The store did not answer within 30 s."
	body, _ := proto.Marshal(export)
	wantStatus(t, postOTLP(t, srv.URL, "/v1/traces", demo.Key, "application/x-protobuf", body, false), http.StatusOK)

	b := newBrowser(t, srv.URL)
	b.signIn("victor")
	page := b.get("/circuits/" + demo.AppID + "/ProcessOrders")
	wantTraceLinked(t, page.body, appID, "the failed span's group does not link to its own request")
}

// A failure that comes as the host's "Executed … (Failed …)" record keeps
// the trace context the record carries (OpenTelemetry's logging stamps it
// with the run's): its group links to that run, on the page and in the API.
func TestAFailedExecutedRecordLinksToItsRun(t *testing.T) {
	t.Parallel()
	srv, _ := apptest.Seeded(t)
	const appID = "0f3d9a2c-5b1e-4c7a-9d2e-3f4a5b6c7d8e"
	nameInsights(t, srv, appID)
	at := srv.Clock.Now().Add(-time.Second)
	rec := &logspb.LogRecord{TimeUnixNano: uint64(at.UnixNano()), SeverityNumber: logspb.SeverityNumber_SEVERITY_NUMBER_ERROR,
		Body:       &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: "Executed 'Functions.ProcessOrders' (Failed, Id=5a1e-77, Duration=153ms)"}},
		TraceId:    linkedTrace,
		SpanId:     linkedSpan,
		Attributes: []*commonpb.KeyValue{otlpKV("exception.message", "The store did not answer within 30 s.")}}
	body, _ := proto.Marshal(&collogspb.ExportLogsServiceRequest{ResourceLogs: []*logspb.ResourceLogs{{
		Resource:  &resourcepb.Resource{Attributes: []*commonpb.KeyValue{otlpKV("service.name", "func-orders-demo")}},
		ScopeLogs: []*logspb.ScopeLogs{{Scope: &commonpb.InstrumentationScope{Name: "Function.ProcessOrders"}, LogRecords: []*logspb.LogRecord{rec}}},
	}}})
	wantStatus(t, postOTLP(t, srv.URL, "/v1/logs", demo.Key, "application/x-protobuf", body, false), http.StatusOK)

	b := newBrowser(t, srv.URL)
	b.signIn("victor")
	page := b.get("/circuits/" + demo.AppID + "/ProcessOrders")
	wantTraceLinked(t, page.body, appID, "the failed record's group does not link to its run")
	link := insightsItem(appID)
	api := b.get("/api/v1/circuits/" + demo.AppID + "/ProcessOrders")
	wantStatus(t, api, http.StatusOK)
	var got struct {
		Errors []struct {
			Example  string   `json:"example"`
			TraceIDs []string `json:"trace_ids"`
			Links    []string `json:"links"`
		} `json:"errors"`
	}
	if err := json.Unmarshal([]byte(api.body), &got); err != nil {
		t.Fatal(err)
	}
	for _, g := range got.Errors {
		if strings.Contains(g.Example, "did not answer") {
			if len(g.Links) != len(g.TraceIDs) || !slices.Contains(g.Links, link) {
				t.Errorf("the API's group has traces %v and links %v, want %s among links as many as traces", g.TraceIDs, g.Links, link)
			}
			return
		}
	}
	t.Errorf("the API names no group of the record's error: %s", api.body)
}

// nameInsights has the demo app name its Application Insights resource.
func nameInsights(t *testing.T, srv *apptest.Server, appID string) {
	t.Helper()
	app, err := srv.App.Store.Apps.Get(t.Context(), demo.AppID)
	if err != nil {
		t.Fatal(err)
	}
	app.InsightsAppID = appID
	if err := srv.App.Store.Apps.Put(t.Context(), app); err != nil {
		t.Fatal(err)
	}
}

// The trace the link tests report (as a traceparent, a span's ids or a
// record's), and the item of it Application Insights is asked to open.
var (
	linkedTrace = []byte{0x0a, 0xf7, 0x65, 0x19, 0x16, 0xcd, 0x43, 0xdd, 0x84, 0x48, 0xeb, 0x21, 0x1c, 0x80, 0x31, 0x9c}
	linkedSpan  = []byte{0xb7, 0xad, 0x6b, 0x71, 0x69, 0x20, 0x33, 0x31}
)

func insightsItem(appID string) string {
	return "https://portal.azure.com/#blade/AppInsightsExtension/Find/appid/" + appID + "/itemid/b7ad6b7169203331"
}

// wantTraceLinked says problem unless the page's first error group shows
// the linked trace and links it to its item in appID's resource.
func wantTraceLinked(t *testing.T, body, appID, problem string) {
	t.Helper()
	want := `href="` + insightsItem(appID) + `"`
	if g := section(body, `data-testid="error-group"`); !strings.Contains(g, want) || !strings.Contains(g, "0af7651916cd43dd8448eb211c80319c") {
		t.Errorf("%s (%s):\n%s", problem, want, g)
	}
}

// On the real clock, a closed circuit's page follows its failures: its
// groups are kept while its rows stay as they were (errortexts.Cache with
// stamps), and a new kind of error shows within the groups' 5 s plus the
// evaluator's next read, never hidden behind the kept groups.
func TestAClosedCircuitsGroupsFollowNewFailures(t *testing.T) {
	t.Parallel()
	srv, _ := apptest.SeededRealClock(t)
	if err := srv.App.Store.Circuits.Put(t.Context(), circuit.Circuit{AppID: demo.AppID, Function: "ScoreLeads", Settings: circuit.Settings{Threshold: 1000, Window: 5 * time.Minute}, State: circuit.Closed}); err != nil {
		t.Fatal(err)
	}
	report := func(msg string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/api/v1/failures", strings.NewReader(fmt.Sprintf(`{"failures":[{"function":"ScoreLeads","count":3,"error":%q}]}`, msg)))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+demo.Key)
		wantStatus(t, newBrowser(t, srv.URL).do(req), http.StatusAccepted)
	}
	b := newBrowser(t, srv.URL)
	b.signIn("victor")
	// waitFor reloads the page, as a person would, until it shows want.
	waitFor := func(want string, within time.Duration) time.Duration {
		t.Helper()
		start := time.Now()
		testenv.Eventually(t, within, func() (bool, string) {
			page := b.get("/circuits/" + demo.AppID + "/ScoreLeads")
			return strings.Contains(page.body, want), fmt.Sprintf("the page does not show %q:\n%s", want, page.body)
		})
		return time.Since(start)
	}
	report("Timeout after 30 s reading leads")
	waitFor("Timeout after 30 s reading leads", 10*time.Second)
	report("Connection refused by the leads store")
	took := waitFor("Connection refused by the leads store", 15*time.Second)
	t.Logf("the new error showed %s after it was reported", took.Round(100*time.Millisecond))
}
