package web_test

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/fusebox/fusebox/internal/apptest"
	"github.com/fusebox/fusebox/internal/auth"
	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/demo"
	"github.com/fusebox/fusebox/internal/testenv"
)

func otlpKV(k, v string) *commonpb.KeyValue {
	return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v}}}
}

// hostSpans is an export as the host makes it: service.name is the site,
// one span per invocation on the host's scope, named after the function.
func hostSpans(site string, at time.Time, failed int, extra ...*tracepb.Span) *coltracepb.ExportTraceServiceRequest {
	var spans []*tracepb.Span
	for i := range failed {
		spans = append(spans, &tracepb.Span{Name: "ProcessOrders", Kind: tracepb.Span_SPAN_KIND_SERVER, SpanId: []byte{0, 0, 0, 0, 0, 0, 1, byte(i)},
			StartTimeUnixNano: uint64(at.UnixNano()), EndTimeUnixNano: uint64(at.UnixNano()),
			Attributes: []*commonpb.KeyValue{otlpKV("faas.invocation_id", fmt.Sprintf("inv-%d-%d", at.UnixNano(), i))},
			Status:     &tracepb.Status{Code: tracepb.Status_STATUS_CODE_ERROR}})
	}
	spans = append(spans, extra...)
	return &coltracepb.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{{
		Resource:   &resourcepb.Resource{Attributes: []*commonpb.KeyValue{otlpKV("service.name", site)}},
		ScopeSpans: []*tracepb.ScopeSpans{{Scope: &commonpb.InstrumentationScope{Name: "Microsoft.Azure.WebJobs.Host"}, Spans: spans}},
	}}}
}

func postOTLP(t *testing.T, base, path, key, ctype string, body []byte, zip bool) response {
	t.Helper()
	if zip {
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		_, _ = zw.Write(body)
		_ = zw.Close()
		body = buf.Bytes()
	}
	req, _ := http.NewRequest(http.MethodPost, base+path, bytes.NewReader(body))
	req.Header.Set("Content-Type", ctype)
	req.Header.Set("Accept", ctype)
	if zip {
		req.Header.Set("Content-Encoding", "gzip")
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	return newBrowser(t, base).do(req)
}

// An exporter that does not hear back sends the same export again; it is
// counted once, over protobuf and over JSON alike.
func TestAnExportSentAgainIsCountedOnce(t *testing.T) {
	t.Parallel()
	srv, _ := apptest.Seeded(t)
	body, _ := proto.Marshal(hostSpans("func-orders-demo", srv.Clock.Now(), 3))
	for range 2 {
		r := postOTLP(t, srv.URL, "/v1/traces", demo.Key, "application/x-protobuf", body, false)
		wantStatus(t, r, http.StatusOK)
		var ans coltracepb.ExportTraceServiceResponse
		if err := proto.Unmarshal([]byte(r.body), &ans); err != nil || ans.GetPartialSuccess().GetRejectedSpans() != 0 {
			t.Fatalf("answer %v %v, want full success", &ans, err)
		}
	}
	if n := storedFailuresOf(t, srv, demo.AppID+"/ProcessOrders"); n != 3 {
		t.Errorf("an export sent twice counted %d failures, want 3", n)
	}
	js := fmt.Sprintf(`{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"func-orders-demo"}}]},
		"scopeSpans":[{"scope":{"name":"Microsoft.Azure.WebJobs.Host"},"spans":[{"name":"ProcessOrders","endTimeUnixNano":"%d","status":{"code":2},
		"attributes":[{"key":"faas.invocation_id","value":{"stringValue":"curl-1"}}]}]}]}]}`, srv.Clock.Now().UnixNano())
	for range 2 {
		r := postOTLP(t, srv.URL, "/otlp/v1/traces", demo.Key, "application/json", []byte(js), true)
		wantStatus(t, r, http.StatusOK)
		if r.Header.Get("Content-Type") != "application/json" {
			t.Errorf("a JSON export answered %q", r.Header.Get("Content-Type"))
		}
	}
	if n := storedFailuresOf(t, srv, demo.AppID+"/ProcessOrders"); n != 4 {
		t.Errorf("after a JSON export sent twice: %d failures, want 4", n)
	}
}

// What the receiver cannot read is refused whole with a status that says
// so; nothing is counted.
func TestAnExportThatDoesNotReadIsRefused(t *testing.T) {
	t.Parallel()
	srv, _ := apptest.Seeded(t)
	good, _ := proto.Marshal(hostSpans("func-orders-demo", srv.Clock.Now(), 1))
	bomb := bytes.Repeat([]byte{0}, 5<<20) // 5 MiB of zeros gzip to a few KiB
	cases := []struct {
		name, path, key, ctype string
		body                   []byte
		zip                    bool
		want                   int
	}{
		{"no key", "/v1/traces", "", "application/x-protobuf", good, false, http.StatusUnauthorized},
		{"a key that does not verify", "/v1/traces", "fbx_" + demo.AppID + "_forged", "application/x-protobuf", good, false, http.StatusUnauthorized},
		{"another content type", "/v1/traces", demo.Key, "text/plain", good, false, http.StatusUnsupportedMediaType},
		{"not protobuf", "/v1/traces", demo.Key, "application/x-protobuf", []byte("\xff\xff\xff"), false, http.StatusBadRequest},
		{"JSON of the wrong shape", "/v1/logs", demo.Key, "application/json", []byte(`{"resourceLogs": 1}`), false, http.StatusBadRequest},
		{"gzip that inflates past the limit", "/v1/traces", demo.Key, "application/x-protobuf", bomb, true, http.StatusRequestEntityTooLarge},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			wantStatus(t, postOTLP(t, srv.URL, c.path, c.key, c.ctype, c.body, c.zip), c.want)
		})
	}
	if n := storedFailuresOf(t, srv, demo.AppID+"/ProcessOrders"); n != 0 {
		t.Errorf("refused exports counted %d failures", n)
	}
	wantStatus(t, postOTLP(t, srv.URL, "/v1/metrics", demo.Key, "application/x-protobuf", nil, false), http.StatusOK)
}

// An export past the limit of records keeps the first ones and tells the
// exporter, in OTLP's partial success, how many it refused.
func TestAnExportPastTheLimitIsTakenInPart(t *testing.T) {
	t.Parallel()
	srv, _ := apptest.Seeded(t)
	body, _ := proto.Marshal(hostSpans("func-orders-demo", srv.Clock.Now(), 0, manySpans(srv.Clock.Now(), 10_005)...))
	r := postOTLP(t, srv.URL, "/v1/traces", demo.Key, "application/x-protobuf", body, false)
	wantStatus(t, r, http.StatusOK)
	var ans coltracepb.ExportTraceServiceResponse
	if err := proto.Unmarshal([]byte(r.body), &ans); err != nil {
		t.Fatal(err)
	}
	if got := ans.GetPartialSuccess(); got.GetRejectedSpans() != 5 || !strings.Contains(got.GetErrorMessage(), "limit of 10000") {
		t.Errorf("partial success %v, want 5 spans refused for the limit", got)
	}
	if n := storedFailuresOf(t, srv, demo.AppID+"/ProcessOrders"); n != 10_000 {
		t.Errorf("%d failures counted, want the first 10000", n)
	}
}

// An export as large as the SDKs' batch (512 spans), each span in a second
// of its own, is counted whole: the 200 rows an API report may write do
// not apply to it, since no exporter sends refused spans again.
func TestAFullSDKBatchSpreadOverSecondsIsCountedWhole(t *testing.T) {
	t.Parallel()
	srv, _ := apptest.Seeded(t)
	now := srv.Clock.Now()
	spans := manySpans(now, 512)
	for i, sp := range spans {
		sp.EndTimeUnixNano = uint64(now.Add(-time.Duration(i) * time.Second).UnixNano())
	}
	body, _ := proto.Marshal(hostSpans("func-orders-demo", now, 0, spans...))
	r := postOTLP(t, srv.URL, "/v1/traces", demo.Key, "application/x-protobuf", body, false)
	wantStatus(t, r, http.StatusOK)
	var ans coltracepb.ExportTraceServiceResponse
	if err := proto.Unmarshal([]byte(r.body), &ans); err != nil {
		t.Fatal(err)
	}
	if got := ans.GetPartialSuccess(); got.GetRejectedSpans() != 0 {
		t.Errorf("partial success %v, want every span taken", got)
	}
	if n := storedFailuresOf(t, srv, demo.AppID+"/ProcessOrders"); n != 512 {
		t.Errorf("%d failures counted, want all 512", n)
	}
}

func manySpans(at time.Time, n int) []*tracepb.Span {
	out := make([]*tracepb.Span, n)
	for i := range out {
		out[i] = &tracepb.Span{Name: "ProcessOrders", SpanId: []byte{0, 0, 0, 0, byte(i >> 16), byte(i >> 8), byte(i), 9}, EndTimeUnixNano: uint64(at.UnixNano()),
			Status: &tracepb.Status{Code: tracepb.Status_STATUS_CODE_ERROR}}
	}
	return out
}

// The key decides the app: a host of app A that calls itself app B's site
// counts for A, and the Apps page says so; spans that name no function
// are counted as such and shown with why.
func TestTheKeyDecidesTheAppAndTheAppsPageSaysWhatArrived(t *testing.T) {
	t.Parallel()
	srv, _ := apptest.Seeded(t)
	_, hashB := auth.NewAppKey("billing")
	if err := srv.App.Store.Apps.Put(t.Context(), circuit.App{ID: "billing", Site: "func-billing", Switch: circuit.SwitchLocal, LocalSettings: t.TempDir() + "/b.json", APIKeyHash: hashB}); err != nil {
		t.Fatal(err)
	}
	if err := srv.App.Store.Circuits.Put(t.Context(), circuit.Circuit{AppID: "billing", Function: "ProcessOrders", Settings: circuit.Settings{Threshold: 100, Window: 30 * time.Second}, State: circuit.Closed}); err != nil {
		t.Fatal(err)
	}
	httpSpan := &tracepb.Span{Name: "POST api/orders", Kind: tracepb.Span_SPAN_KIND_SERVER, EndTimeUnixNano: uint64(srv.Clock.Now().UnixNano())}
	req := hostSpans("func-billing", srv.Clock.Now(), 2)
	req.ResourceSpans = append(req.ResourceSpans, &tracepb.ResourceSpans{ScopeSpans: []*tracepb.ScopeSpans{{Scope: &commonpb.InstrumentationScope{Name: "Microsoft.AspNetCore"}, Spans: []*tracepb.Span{httpSpan}}}})
	body, _ := proto.Marshal(req)
	wantStatus(t, postOTLP(t, srv.URL, "/v1/traces", demo.Key, "application/x-protobuf", body, false), http.StatusOK)
	if a, b := storedFailuresOf(t, srv, demo.AppID+"/ProcessOrders"), storedFailuresOf(t, srv, "billing"+"/ProcessOrders"); a != 2 || b != 0 {
		t.Errorf("the demo key's export counted %d for the demo app and %d for billing, want 2 and 0", a, b)
	}
	if err := srv.App.FlushTelemetry(t.Context()); err != nil {
		t.Fatal(err)
	}
	b := newBrowser(t, srv.URL)
	b.signIn("olivia")
	page := b.get("/apps").body
	for _, want := range []string{
		"service.name “func-billing” is not this app's site “func-orders-demo”",
		"1: HTTP request span without faas.name",
		`data-testid="telemetry-orders-demo-traces"`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the Apps page does not say %q:\n%s", want, testenv.GrepLines(page, "telemetry"))
		}
	}
	if strings.Contains(page, `data-testid="telemetry-billing"`) {
		t.Error("billing, which sent nothing, has a telemetry section")
	}
	// An app whose export stops is alertable from the metrics.
	metrics := b.get("/metrics").body
	if !strings.Contains(metrics, `fusebox_otlp_last_export_timestamp_seconds{app="orders-demo",signal="traces"}`) || strings.Contains(metrics, `app="billing"`) {
		t.Errorf("metrics:\n%s", testenv.GrepLines(metrics, "otlp"))
	}
}

// emptyResources is n empty resource_spans: 2 bytes each on the wire and
// about 100 decoded, which no record cap stops.
func emptyResources(n int) []byte {
	out := make([]byte, 0, 2*n)
	for range n {
		out = append(out, 0x0a, 0x00)
	}
	return out
}

// emptySpans is n empty spans in one scope of one resource.
func emptySpans(n int) []byte {
	var scope []byte
	for range n {
		scope = append(scope, 0x12, 0x00)
	}
	rs := append([]byte{0x12}, protowireLen(len(scope))...)
	rs = append(rs, scope...)
	out := append([]byte{0x0a}, protowireLen(len(rs))...)
	return append(out, rs...)
}

func protowireLen(n int) []byte {
	var b []byte
	for n >= 0x80 {
		b = append(b, byte(n)|0x80)
		n >>= 7
	}
	return append(b, byte(n))
}

// A logs export whose decoding would cost more memory than any host's is
// refused before it is built (413, which exporters do not retry); a trace
// export is read without building its messages, so 2 million empty
// resources cost nothing and are answered (no span in them), and one of 2
// million empty spans is read up to the first 10,000, the rest refused
// with OTLP's partial success.
func TestAnExportThatWouldCostTooMuchToDecodeIsRefused(t *testing.T) {
	t.Parallel()
	srv, _ := apptest.Seeded(t)
	r := postOTLP(t, srv.URL, "/v1/logs", demo.Key, "application/x-protobuf", emptyResources(2_000_000), true)
	wantStatus(t, r, http.StatusRequestEntityTooLarge)
	if !strings.Contains(r.body, "memory to decode") {
		t.Errorf("the refusal does not say why: %s", r.body)
	}
	r = postOTLP(t, srv.URL, "/v1/traces", demo.Key, "application/x-protobuf", emptyResources(2_000_000), true)
	wantStatus(t, r, http.StatusOK)
	r = postOTLP(t, srv.URL, "/v1/traces", demo.Key, "application/x-protobuf", emptySpans(2_000_000), true)
	wantStatus(t, r, http.StatusOK)
	var ans coltracepb.ExportTraceServiceResponse
	if err := proto.Unmarshal([]byte(r.body), &ans); err != nil {
		t.Fatal(err)
	}
	if got := ans.GetPartialSuccess().GetRejectedSpans(); got != 2_000_000-10_000 {
		t.Errorf("%d spans refused, want the 1,990,000 past the limit", got)
	}
	json := `{"resourceSpans":[{"scopeSpans":[{"spans":[` + strings.Repeat("{},", 1_300_000) + `{}]}]}]}`
	r = postOTLP(t, srv.URL, "/v1/traces", demo.Key, "application/json", []byte(json), true)
	wantStatus(t, r, http.StatusRequestEntityTooLarge)
}

// rawCodec sends bytes as they are: an exporter's message no SDK would
// build, for the gRPC path.
type rawCodec struct{}

func (rawCodec) Name() string { return "proto" }
func (rawCodec) Marshal(v any) ([]byte, error) {
	if b, ok := v.(*[]byte); ok {
		return *b, nil
	}
	return proto.Marshal(v.(proto.Message))
}
func (rawCodec) Unmarshal(data []byte, v any) error { return proto.Unmarshal(data, v.(proto.Message)) }

// Over gRPC the same: a logs export's bytes are weighed before anything is
// built, and refused with ResourceExhausted; the cut spans are told as
// partial success.
func TestAnExportThatWouldCostTooMuchToDecodeIsRefusedOverGRPC(t *testing.T) {
	t.Parallel()
	srv, _ := apptest.Seeded(t)
	conn, err := grpc.NewClient(strings.TrimPrefix(srv.URL, "http://"), grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.ForceCodec(rawCodec{}), grpc.MaxCallSendMsgSize(8<<20)))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx := metadata.AppendToOutgoingContext(t.Context(), "authorization", "Bearer "+demo.Key)
	body := emptyResources(2_000_000)
	var ans coltracepb.ExportTraceServiceResponse
	err = conn.Invoke(ctx, "/opentelemetry.proto.collector.logs.v1.LogsService/Export", &body, &collogspb.ExportLogsServiceResponse{})
	if status.Code(err) != codes.ResourceExhausted || !strings.Contains(status.Convert(err).Message(), "memory to decode") {
		t.Fatalf("2,000,000 empty resources over gRPC: %v, want ResourceExhausted saying why", err)
	}
	body = emptySpans(2_000_000)
	if err := conn.Invoke(ctx, "/opentelemetry.proto.collector.trace.v1.TraceService/Export", &body, &ans); err != nil {
		t.Fatal(err)
	}
	if got := ans.GetPartialSuccess().GetRejectedSpans(); got != 2_000_000-10_000 {
		t.Errorf("%d spans refused, want the 1,990,000 past the limit", got)
	}
}
