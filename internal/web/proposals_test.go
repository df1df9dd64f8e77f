package web_test

import (
	"fmt"
	"html"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/fusebox/fusebox/internal/apptest"
	"github.com/fusebox/fusebox/internal/demo"
)

var tag = regexp.MustCompile(`<[^>]*>`)

// stripTags is an HTML fragment's text.
func stripTags(s string) string { return html.UnescapeString(tag.ReplaceAllString(s, "")) }

// exportOf is one process's export: spans on scope, from site.
func exportOf(site, scope string, spans ...*tracepb.Span) []byte {
	b, _ := proto.Marshal(&coltracepb.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{{
		Resource:   &resourcepb.Resource{Attributes: []*commonpb.KeyValue{otlpKV("service.name", site)}},
		ScopeSpans: []*tracepb.ScopeSpans{{Scope: &commonpb.InstrumentationScope{Name: scope}, Spans: spans}},
	}}})
	return b
}

// traceNo is the n-th test trace id.
func traceNo(n int) []byte {
	return []byte{0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6, 0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, byte(n >> 8), byte(n)}
}

// failedRun is the host's span of a failed invocation of function in
// trace n; its error names no host.
func failedRun(function string, n int, at time.Time) *tracepb.Span {
	return &tracepb.Span{Name: function, Kind: tracepb.Span_SPAN_KIND_SERVER, TraceId: traceNo(n), SpanId: []byte{0, 0, 0, 0, 0, 0, 1, byte(n)},
		StartTimeUnixNano: uint64(at.Add(-time.Second).UnixNano()), EndTimeUnixNano: uint64(at.UnixNano()),
		Attributes: []*commonpb.KeyValue{otlpKV("faas.invocation_id", fmt.Sprintf("inv-%s-%d", function, n))},
		Status:     &tracepb.Status{Code: tracepb.Status_STATUS_CODE_ERROR, Message: "Exception while executing function: the operation was cancelled"}}
}

// failedCall is the worker's span of a failed call in trace n.
func failedCall(n int, at time.Time, attrs ...*commonpb.KeyValue) *tracepb.Span {
	return &tracepb.Span{Name: "GET", Kind: tracepb.Span_SPAN_KIND_CLIENT, TraceId: traceNo(n), SpanId: []byte{0, 0, 0, 0, 0, 0, 2, byte(n)},
		StartTimeUnixNano: uint64(at.Add(-time.Second).UnixNano()), EndTimeUnixNano: uint64(at.Add(-100 * time.Millisecond).UnixNano()),
		Attributes: attrs, Status: &tracepb.Status{Code: tracepb.Status_STATUS_CODE_ERROR}}
}

// Failures whose texts name no host still propose the downstream their
// failed calls name: the worker's dependency spans (another export, sent
// before the host's for one app and after it for the other) are matched
// to the failed runs by trace. A target one app alone calls is not
// proposed.
func TestFailedCallsProposeADownstreamAcrossApps(t *testing.T) {
	t.Parallel()
	srv, _ := apptest.Seeded(t)
	secondApp(t, srv, t.TempDir()+"/local.settings.json", time.Minute, "ReserveStock")
	at := srv.Clock.Now().Add(-2 * time.Second)
	post := func(key string, body []byte) {
		t.Helper()
		wantStatus(t, postOTLP(t, srv.URL, "/v1/traces", key, "application/x-protobuf", body, false), http.StatusOK)
	}
	// orders: the worker's calls first, then the host's runs.
	post(demo.Key, exportOf("func-orders-demo", "System.Net.Http",
		failedCall(1, at, otlpKV("server.address", "Inventory-DB.example.com")),
		failedCall(2, at, otlpKV("server.address", "inventory-db.example.com")),
		failedCall(2, at, otlpKV("server.address", "payments.example.com"))))
	post(demo.Key, exportOf("func-orders-demo", "Microsoft.Azure.WebJobs.Host", failedRun("ProcessOrders", 1, at), failedRun("ProcessOrders", 2, at)))
	// shipping: the host's runs first, then the worker's calls.
	post(shippingKey, exportOf("func-shipping-demo", "Microsoft.Azure.WebJobs.Host", failedRun("ReserveStock", 3, at)))
	post(shippingKey, exportOf("func-shipping-demo", "Microsoft.Data.SqlClient",
		failedCall(3, at, otlpKV("db.system", "mssql"), otlpKV("server.address", "inventory-db.example.com"), otlpKV("db.name", "inventory"))))
	if err := srv.App.FlushTelemetry(t.Context()); err != nil {
		t.Fatal(err)
	}

	b := newBrowser(t, srv.URL)
	b.signIn("olivia")
	page := b.get("/downstreams")
	var proposals []string
	for _, li := range strings.Split(page.body, `<li data-testid="proposal">`)[1:] {
		proposals = append(proposals, strings.ReplaceAll(strings.Join(strings.Fields(stripTags(li[:strings.Index(li, "</li>")])), " "), " ,", ","))
	}
	want := "inventory-db.example.com: " + demo.AppID + "/ProcessOrders, shipping-demo/ReserveStock (2 apps), named by their failed calls"
	if len(proposals) != 1 || proposals[0] != want {
		t.Fatalf("the page proposes %q; want only %q", proposals, want)
	}
}
