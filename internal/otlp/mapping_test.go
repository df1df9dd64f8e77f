package otlp

import (
	"fmt"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	logspb "go.opentelemetry.io/proto/otlp/logs/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

var at = time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC)

func kv(k, v string) *commonpb.KeyValue {
	return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v}}}
}

func kvInt(k string, v int64) *commonpb.KeyValue {
	return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: v}}}
}

func traces(scope string, spans ...*tracepb.Span) *coltracepb.ExportTraceServiceRequest {
	return &coltracepb.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{{
		Resource:   &resourcepb.Resource{Attributes: []*commonpb.KeyValue{kv("service.name", "func-orders"), kv("service.instance.id", "vm-1")}},
		ScopeSpans: []*tracepb.ScopeSpans{{Scope: &commonpb.InstrumentationScope{Name: scope}, Spans: spans}},
	}}}
}

func span(name string, kind tracepb.Span_SpanKind, failed bool, attrs ...*commonpb.KeyValue) *tracepb.Span {
	s := &tracepb.Span{Name: name, Kind: kind, SpanId: []byte{1, 2, 3, 4, 5, 6, 7, 8}, StartTimeUnixNano: uint64(at.UnixNano()), EndTimeUnixNano: uint64(at.Add(time.Second).UnixNano()), Attributes: attrs}
	if failed {
		s.Status = &tracepb.Status{Code: tracepb.Status_STATUS_CODE_ERROR, Message: "store offline"}
	}
	return s
}

// TestWhichSpansAreInvocations is the rule, case by case: which spans
// count, which function they name, whether they failed, and which are
// shown as not attributable instead of guessed.
func TestWhichSpansAreInvocations(t *testing.T) {
	server, internal := tracepb.Span_SPAN_KIND_SERVER, tracepb.Span_SPAN_KIND_INTERNAL
	cases := []struct {
		name     string
		req      *coltracepb.ExportTraceServiceRequest
		function string // "" when no invocation is counted
		id       string
		failed   bool
		why      string // the unattributed reason, when one
	}{
		{"the host's own span is named after the function", traces("Microsoft.Azure.WebJobs.Host", span("ProcessOrders", server, true, kv("faas.execution", "inv-1"))),
			"ProcessOrders", "inv-1", true, ""},
		{"a worker's faas.name wins", traces("Microsoft.Azure.Functions.Worker", span("Invoke", internal, false, kv("faas.name", "ProcessOrders"), kv("faas.invocation_id", "inv-2"))),
			"ProcessOrders", "inv-2", false, ""},
		{"faas.name as the host writes it, Functions.<Name>", traces("other", span("x", internal, true, kv("faas.name", "Functions.SyncInventory"))),
			"SyncInventory", "span:0102030405060708", true, ""},
		{"a method's full name on the host's scope falls back to the span name", traces("Microsoft.Azure.WebJobs", span("ProcessOrders", server, false, kv("faas.name", "Contoso.Orders.Run"))),
			"ProcessOrders", "span:0102030405060708", false, ""},
		{"a dependency span is no invocation", traces("System.Net.Http", span("GET", tracepb.Span_SPAN_KIND_CLIENT, true)), "", "", false, ""},
		{"an HTTP trigger's server error fails it", traces("Microsoft.AspNetCore", span("POST api/orders", server, false, kv("faas.name", "TakeOrder"), kvInt("http.response.status_code", 503))),
			"TakeOrder", "span:0102030405060708", true, ""},
		{"a 404 is no failure", traces("Microsoft.AspNetCore", span("GET api/orders", server, false, kv("faas.name", "TakeOrder"), kvInt("http.response.status_code", 404))),
			"TakeOrder", "span:0102030405060708", false, ""},
		{"an HTTP span without faas.name is not guessed from its route", traces("Microsoft.AspNetCore", span("POST api/orders", server, true)), "", "", false, WhyHTTP},
		{"a processor span without faas.name names no function", traces("Azure.Messaging.EventHubs.EventProcessor", span("EventProcessor.Process", tracepb.Span_SPAN_KIND_CONSUMER, true)), "", "", false, WhyProcessor},
		{"faas.name twice with different values (host issue 11929)", traces("x", span("x", internal, true, kv("faas.name", "A"), kv("faas.name", "B"))), "", "", false, WhyConflicting},
		{"faas.name twice with one value is fine", traces("x", span("x", internal, true, kv("faas.name", "A"), kv("faas.name", "A"))), "A", "span:0102030405060708", true, ""},
		{"a name that is no function name", traces("x", span("x", internal, true, kv("faas.name", "drop table;"))), "", "", false, WhyName},
		{"an invocation id of 4 kB is refused, not remembered", traces("Microsoft.Azure.WebJobs.Host", span("ProcessOrders", server, true, kv("faas.invocation_id", strings.Repeat("x", 4096)))),
			"", "", false, WhyLongID},
		{"an older SDK's reason in faas.execution is no id: the span's id is", traces("Microsoft.Azure.WebJobs.Host", span("ProcessOrders", server, false, kv("faas.execution", "New queue message detected on 'orders'."))),
			"ProcessOrders", "span:0102030405060708", false, ""},
		{"the .NET worker's schema 1.37 span: 'function <Name>'", traces("Microsoft.Azure.Functions.Worker", span("function ProcessOrders", internal, true, kv("faas.invocation_id", "inv-3"))),
			"ProcessOrders", "inv-3", true, ""},
		{"the .NET worker's schema 1.17 'Invoke' span names no function", traces("Microsoft.Azure.Functions.Worker", span("Invoke", server, false, kv("faas.execution", "inv-4"))),
			"", "", false, WhyWorker},
		{"a span without time", traces("x", &tracepb.Span{Name: "x", Attributes: []*commonpb.KeyValue{kv("faas.name", "A")}}), "", "", false, WhyNoTime},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := readBoth(t, c.req)
			if c.why != "" {
				if m.Unattributed[c.why] != 1 || len(m.Invocations) != 0 {
					t.Fatalf("got %+v, want one unattributed %q", m, c.why)
				}
				return
			}
			if c.function == "" {
				if len(m.Invocations) != 0 || len(m.Unattributed) != 0 {
					t.Fatalf("got %+v, want nothing counted", m)
				}
				return
			}
			if len(m.Invocations) != 1 {
				t.Fatalf("got %+v, want one invocation", m)
			}
			inv := m.Invocations[0]
			if inv.Function != c.function || inv.ID != c.id || inv.Failed != c.failed || !inv.At.Equal(at.Add(time.Second)) || inv.Instance != "vm-1" {
				t.Errorf("got %+v, want %s id %s failed %v at the span's end on vm-1", inv, c.function, c.id, c.failed)
			}
			if !inv.Start.Equal(at) {
				t.Errorf("began %s, want the span's start %s", inv.Start, at)
			}
		})
	}
}

// readBoth maps req as the receiver does, from its bytes, and fails
// unless that reads as FromTraces reads the messages (JSON's path).
func readBoth(t *testing.T, req *coltracepb.ExportTraceServiceRequest) Mapped {
	t.Helper()
	b, err := proto.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	m, _, err := DecodeTraces(b)
	if err != nil {
		t.Fatal(err)
	}
	if want := FromTraces(req); !reflect.DeepEqual(m, want) {
		t.Fatalf("from the bytes %+v, from the messages %+v", m, want)
	}
	return m
}

// TestAFailedSpansErrorText: what a failed span says went wrong is its
// last exception event's type and message (OpenTelemetry's
// RecordException), else its status message; a succeeded span keeps none.
func TestAFailedSpansErrorText(t *testing.T) {
	server := tracepb.Span_SPAN_KIND_SERVER
	exception := func(typ, msg string) *tracepb.Span_Event {
		e := &tracepb.Span_Event{Name: "exception"}
		if typ != "" {
			e.Attributes = append(e.Attributes, kv("exception.type", typ))
		}
		if msg != "" {
			e.Attributes = append(e.Attributes, kv("exception.message", msg))
		}
		return e
	}
	with := func(failed bool, events ...*tracepb.Span_Event) *coltracepb.ExportTraceServiceRequest {
		s := span("SyncInventory", server, failed, kv("faas.invocation_id", "inv-1"))
		s.Events = events
		return traces("Microsoft.Azure.WebJobs.Host", s)
	}
	long := strings.Repeat("é", 200)
	for _, c := range []struct {
		name string
		req  *coltracepb.ExportTraceServiceRequest
		want string
	}{
		{"the exception's type and message", with(true, exception("System.TimeoutException", "The store did not answer in 30 s.")), "System.TimeoutException: The store did not answer in 30 s."},
		{"the exception's message alone", with(true, exception("", "Connection refused")), "Connection refused"},
		{"the exception's type alone", with(true, exception("KeyError", "")), "KeyError"},
		{"the last exception of several", with(true, exception("A", "first"), &tracepb.Span_Event{Name: "retry"}, exception("B", "second")), "B: second"},
		{"no exception event: the status message", with(true, &tracepb.Span_Event{Name: "retry", Attributes: []*commonpb.KeyValue{kv("exception.message", "not an exception event")}}), "store offline"},
		{"cut at 300 bytes on a character", with(true, exception("", long)), strings.Repeat("é", 150)},
		{"a succeeded span keeps no text", with(false, exception("A", "handled")), ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := readBoth(t, c.req)
			if len(m.Invocations) != 1 || m.Invocations[0].Sample != c.want {
				t.Fatalf("got %+v, want one invocation saying %q", m.Invocations, c.want)
			}
		})
	}
}

func logs(records ...*logspb.LogRecord) *collogspb.ExportLogsServiceRequest {
	return &collogspb.ExportLogsServiceRequest{ResourceLogs: []*logspb.ResourceLogs{{
		Resource:  &resourcepb.Resource{Attributes: []*commonpb.KeyValue{kv("service.name", "func-orders")}},
		ScopeLogs: []*logspb.ScopeLogs{{Scope: &commonpb.InstrumentationScope{Name: "Function.ProcessOrders"}, LogRecords: records}},
	}}}
}

func record(body string, attrs ...*commonpb.KeyValue) *logspb.LogRecord {
	return &logspb.LogRecord{TimeUnixNano: uint64(at.UnixNano()), Body: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: body}}, Attributes: attrs}
}

func TestWhichLogRecordsAreInvocations(t *testing.T) {
	cases := []struct {
		name     string
		rec      *logspb.LogRecord
		function string
		id       string
		failed   bool
		why      string
		took     time.Duration // the run's length the record gives: At - Start
	}{
		{"a failed invocation", record("Executed 'Functions.ProcessOrders' (Failed, Id=0b8e-41, Duration=153ms)"), "ProcessOrders", "0b8e-41", true, "", 153 * time.Millisecond},
		{"a successful one", record("Executed 'Functions.ProcessOrders' (Succeeded, Id=0b8e-42, Duration=3ms)"), "ProcessOrders", "0b8e-42", false, "", 3 * time.Millisecond},
		{"no duration: it began as it ended", record("Executed 'Functions.ProcessOrders' (Succeeded, Id=0b8e-43)"), "ProcessOrders", "0b8e-43", false, "", 0},
		{"the template with its values", record("Executed '{functionName}' ({status}, Id={invocationId}, Duration={executionDuration}ms)",
			kv("functionName", "Functions.SyncInventory"), kv("status", "Failed"), kv("invocationId", "abc")), "SyncInventory", "abc", true, "", 0},
		{"the template's duration as the host logs it, a double", record("Executed '{functionName}' ({status}, Id={invocationId}, Duration={executionDuration}ms)",
			kv("functionName", "Functions.NightlyExport"), kv("status", "Succeeded"), kv("invocationId", "abd"),
			&commonpb.KeyValue{Key: "executionDuration", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_DoubleValue{DoubleValue: 61250.5}}}),
			"NightlyExport", "abd", false, "", 61250500 * time.Microsecond},
		{"any other record", record("Executing 'Functions.ProcessOrders' (Reason='New events', Id=1)"), "", "", false, "", 0},
		{"an Executed record in another form", record("Executed 'Functions.ProcessOrders' (Cancelled, Id=1)"), "", "", false, WhyUnreadable, 0},
		{"an Executed record with a bad name", record("Executed 'Functions.drop table' (Failed, Id=1)"), "", "", false, WhyLogName, 0},
		{"the template with an id of 65 bytes is refused, not remembered", record("Executed '{functionName}' ({status}, Id={invocationId}, Duration={executionDuration}ms)",
			kv("functionName", "Functions.SyncInventory"), kv("status", "Failed"), kv("invocationId", strings.Repeat("a", 65))), "", "", false, WhyLongID, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := FromLogs(logs(c.rec))
			switch {
			case c.why != "":
				if m.Unattributed[c.why] != 1 || len(m.Invocations) != 0 {
					t.Fatalf("got %+v, want one unattributed %q", m, c.why)
				}
			case c.function == "":
				if len(m.Invocations) != 0 {
					t.Fatalf("got %+v, want nothing", m)
				}
			default:
				if len(m.Invocations) != 1 || m.Invocations[0].Signal != ExecutedRecord {
					t.Fatalf("got %+v, want one invocation", m)
				}
				inv := m.Invocations[0]
				if inv.Function != c.function || inv.ID != c.id || inv.Failed != c.failed || !inv.At.Equal(at) {
					t.Errorf("got %+v", inv)
				}
				if took := inv.At.Sub(inv.Start); took != c.took {
					t.Errorf("the run took %s by its record, want %s", took, c.took)
				}
			}
		})
	}
}

func TestAnExportTooLargeIsCutAndSaysHowMuch(t *testing.T) {
	var spans []*tracepb.Span
	for range 25 {
		spans = append(spans, span("A", tracepb.Span_SPAN_KIND_SERVER, true))
	}
	req := traces("Microsoft.Azure.WebJobs", spans...)
	req.ResourceSpans = append(req.ResourceSpans, traces("Microsoft.Azure.WebJobs", spans[:5]...).ResourceSpans...)
	if cut := LimitTraces(req, 20); cut != 10 {
		t.Errorf("cut %d spans, want 10", cut)
	}
	if m := FromTraces(req); len(m.Invocations) != 20 {
		t.Errorf("%d invocations left, want 20", len(m.Invocations))
	}
}

func TestSeenCountsAnInvocationOnceAcrossExportsButNotAcrossRetries(t *testing.T) {
	var s Seen
	a := []Invocation{{Function: "F", ID: "1"}, {Function: "F", ID: "2"}, {Function: "F", ID: "2"}}
	v := s.Judge("app", "export-1", a, at)
	fresh, dropped := v.Count, v.Duplicates
	if len(fresh) != 2 || dropped != 1 {
		t.Fatalf("fresh %v dropped %d: one export naming an invocation twice counts it once", fresh, dropped)
	}
	s.Counted("app", "export-1", fresh, at)
	if fresh := s.Judge("app", "export-1", a[:2], at).Count; len(fresh) != 2 {
		t.Errorf("a retried export (same content) must write its rows again, got %v", fresh)
	}
	if v := s.Judge("app", "export-2", a[:2], at); len(v.Count) != 0 || v.Duplicates != 2 {
		t.Errorf("the log record of a counted span counted again: %v", v.Count)
	}
	if fresh := s.Judge("other-app", "export-2", a[:2], at).Count; len(fresh) != 2 {
		t.Errorf("ids are per app, got %v", fresh)
	}
	if fresh := s.Judge("app", "export-3", a[:2], at.Add(25*time.Minute)).Count; len(fresh) != 2 {
		t.Errorf("ids are forgotten after two generations, got %v", fresh)
	}
}

func TestSummaryShowsTheLastHourForeignNamesAndSilence(t *testing.T) {
	now := at
	rows := []Arrival{
		{Source: Traces, Records: 10, Invocations: 8, Counted: 8, Failures: 2, Unattributed: map[string]int{WhyHTTP: 2}, ServiceNames: []string{"func-orders"}, Last: now.Add(-time.Minute)},
		{Source: Traces, Records: 5, Invocations: 5, Counted: 5, ServiceNames: []string{"func-other"}, Last: now.Add(-2 * time.Minute)},
		{Source: Logs, Records: 100, Invocations: 90, Last: now.Add(-3 * time.Hour)},
	}
	s := Summarize(rows, "func-orders", now)
	if tr := s.Hour[Traces]; tr.Records != 15 || tr.Counted != 13 || tr.Unattributed[WhyHTTP] != 2 {
		t.Errorf("traces in the last hour: %+v", tr)
	}
	if _, ok := s.Hour[Logs]; ok {
		t.Error("logs of three hours ago counted in the last hour")
	}
	if len(s.ForeignNames) != 1 || s.ForeignNames[0] != "func-other" || s.Silent {
		t.Errorf("summary %+v", s)
	}
	if s := Summarize(rows, "func-orders", now.Add(11*time.Minute)); !s.Silent {
		t.Error("11 minutes without an export is not called silent")
	}
	if s := Summarize(nil, "x", now); s.Silent || s.Any() {
		t.Error("an app that never sent is called silent")
	}
}

// An export sent again, by gRPC or HTTP, as protobuf or JSON, has the same
// key, so its rows are replaced; other invocations have another.
func TestTheSameInvocationsHaveTheSameKey(t *testing.T) {
	req := traces("Microsoft.Azure.WebJobs", span("A", tracepb.Span_SPAN_KIND_SERVER, true, kv("faas.invocation_id", "1")))
	b, err := protojson.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	fromJSON := &coltracepb.ExportTraceServiceRequest{}
	if err := protojson.Unmarshal(b, fromJSON); err != nil {
		t.Fatal(err)
	}
	a, again := FromTraces(req), FromTraces(fromJSON)
	if a.Key() != again.Key() {
		t.Error("the same export as JSON has another key")
	}
	other := FromTraces(traces("Microsoft.Azure.WebJobs", span("A", tracepb.Span_SPAN_KIND_SERVER, false, kv("faas.invocation_id", "1"))))
	if other.Key() == a.Key() {
		t.Error("a success and a failure of one invocation share a key")
	}
	fromLog := FromLogs(logs(record("Executed 'Functions.A' (Failed, Id=1, Duration=1ms)")))
	if fromLog.Key() == a.Key() {
		t.Error("the log record of an invocation has its span's key: the two would replace each other's rows")
	}
}

// TestSeenIsBoundedInBytes: ids from exports at any rate never hold more
// than two generations of MaxBytes, however many ids come.
func TestSeenIsBoundedInBytes(t *testing.T) {
	s := Seen{MaxBytes: 1 << 20}
	id := strings.Repeat("i", MaxID-8)
	for e := range 200 {
		var invs []Invocation
		for i := range 1000 {
			invs = append(invs, Invocation{Function: "F", ID: fmt.Sprintf("%s%08d", id, e*1000+i)})
		}
		s.Counted("app", fmt.Sprint("export-", e), invs, at)
	}
	if got := s.Bytes(); got > 2<<20+256 {
		t.Errorf("200,000 ids of 64 bytes hold %d bytes, want at most two generations of 1 MiB", got)
	}
	if got := s.Bytes(); got < 1<<20 {
		t.Errorf("only %d bytes held: the last generation was not kept", got)
	}
	s.Counted("app", "long", []Invocation{{Function: "F", ID: strings.Repeat("x", 4096)}}, at)
	if fresh := s.Judge("app", "other", []Invocation{{Function: "F", ID: strings.Repeat("x", 4096)}}, at).Count; len(fresh) != 1 {
		t.Error("an id longer than MaxID was remembered")
	}
}

// TestSeenEntryBytes holds entryBytes to what the runtime spends: the
// heap a generation of ids takes, at sizes just after and just before its
// map grows, is at most entryBytes an id.
func TestSeenEntryBytes(t *testing.T) {
	for _, n := range []int{7 << 14, 7 << 15, 7<<15 + 1} {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		s := Seen{MaxBytes: 1 << 30}
		invs := make([]Invocation, n)
		for i := range invs {
			invs[i] = Invocation{Function: "F", ID: fmt.Sprintf("%08x-0000-4000-8000-000000000000", i)}
		}
		s.Counted("app", "export", invs, at)
		invs = nil
		runtime.GC()
		runtime.ReadMemStats(&after)
		per := float64(after.HeapAlloc-before.HeapAlloc) / float64(n)
		t.Logf("%d ids: %.1f bytes each", n, per)
		if per > entryBytes {
			t.Errorf("%d ids take %.1f bytes each, over entryBytes (%d)", n, per, entryBytes)
		}
		runtime.KeepAlive(&s)
	}
}
