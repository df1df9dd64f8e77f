package otlp

import (
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"strings"
	"testing"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// emptySpans is the attack: one resource, one scope, n empty spans, each
// 2 bytes on the wire.
func emptySpans(n int) []byte {
	var scope []byte
	for range n {
		scope = protowire.AppendTag(scope, 2, protowire.BytesType)
		scope = protowire.AppendBytes(scope, nil)
	}
	rs := protowire.AppendBytes(protowire.AppendTag(nil, 2, protowire.BytesType), scope)
	return protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), rs)
}

// emptyResources is the same with n empty resource_spans: containers, no
// records, so no record cap would stop them.
func emptyResources(n int) []byte {
	var b []byte
	for range n {
		b = protowire.AppendTag(b, 1, protowire.BytesType)
		b = protowire.AppendBytes(b, nil)
	}
	return b
}

func mustUnmarshal(t *testing.T, b []byte) *coltracepb.ExportTraceServiceRequest {
	t.Helper()
	req := &coltracepb.ExportTraceServiceRequest{}
	if err := proto.Unmarshal(b, req); err != nil {
		t.Fatal(err)
	}
	return req
}

// allocated is what f allocates on the heap, measured.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestDecodingCostsBoundedMemory measures what decoding the two attacks
// allocates: 2 million empty spans (4 MiB on the wire, ~600 MB when
// proto.Unmarshal builds them all) are read up to MaxRecords and the rest
// only counted, and 2 million empty resources build nothing at all.
func TestDecodingCostsBoundedMemory(t *testing.T) {
	spans := emptySpans(2_000_000)
	var m Mapped
	var cut int
	var err error
	got := allocated(func() { m, cut, err = DecodeTraces(spans) })
	if err != nil || cut != 2_000_000-MaxRecords || m.Records != MaxRecords {
		t.Fatalf("decoded %v, %d spans read, %d cut: want the first %d read and the rest cut", err, m.Records, cut, MaxRecords)
	}
	t.Logf("2,000,000 empty spans (%d bytes): %d kB allocated", len(spans), got>>10)
	// What it keeps room for: MaxRecords invocations, none of them used.
	if got > 4<<20 {
		t.Errorf("decoding 2,000,000 empty spans allocated %d kB, want at most 4 MB", got>>10)
	}
	resources := emptyResources(2_000_000)
	got = allocated(func() { m, cut, err = DecodeTraces(resources) })
	if err != nil || cut != 0 || m.Records != 0 {
		t.Fatalf("2,000,000 empty resources: %v, %d spans, %d cut; want nothing read, nothing refused", err, m.Records, cut)
	}
	t.Logf("2,000,000 empty resources (%d bytes): %d kB allocated", len(resources), got>>10)
	if got > 1<<20 {
		t.Errorf("reading 2,000,000 empty resources allocated %d kB, want at most 1 MB", got>>10)
	}
	// The largest export that keeps the most: MaxRecords failed spans,
	// each with the longest id, instance, error text and function name
	// that are kept, and every other attribute and event skipped.
	long := func(c byte, n int) string { return strings.Repeat(string(c), n) }
	var many []*tracepb.Span
	for i := range MaxRecords {
		s := span("F"+long('x', 120), tracepb.Span_SPAN_KIND_SERVER, true, kv("faas.invocation_id", fmt.Sprintf("%064d", i)), kv("faas.instance", long('i', 1000)))
		s.Status.Message = long('m', 1000)
		s.TraceId = []byte("0123456789abcdef")
		many = append(many, s)
	}
	b, _ := proto.Marshal(traces("Microsoft.Azure.WebJobs.Host", many...))
	got = allocated(func() { m, _, err = DecodeTraces(b) })
	if err != nil || len(m.Invocations) != MaxRecords {
		t.Fatalf("%d spans with the longest texts kept: %v, %d invocations", MaxRecords, err, len(m.Invocations))
	}
	t.Logf("%d failed spans with the longest texts kept (%d bytes): %d MB allocated", MaxRecords, len(b), got>>20)
	if got > 16<<20 {
		t.Errorf("the export that keeps the most allocated %d MB, want at most 16", got>>20)
	}
}

// TestDecodeReadsWhatUnmarshalReads: a host-shaped export reads as
// FromTraces reads what proto.Unmarshal makes of it, with the same spans
// cut past the limit as LimitTraces cuts, and nothing cut under it.
func TestDecodeReadsWhatUnmarshalReads(t *testing.T) {
	var spans []*tracepb.Span
	for i := range 25 {
		spans = append(spans, span("A", tracepb.Span_SPAN_KIND_SERVER, i%2 == 0, kv("faas.invocation_id", fmt.Sprintf("0b8e-%d", i)), kv("faas.name", "Functions.A")))
	}
	req := traces("Microsoft.Azure.WebJobs", spans...)
	req.ResourceSpans = append(req.ResourceSpans, traces("Microsoft.Azure.WebJobs", spans[:5]...).ResourceSpans...)
	b, err := proto.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	want := &coltracepb.ExportTraceServiceRequest{}
	if err := proto.Unmarshal(b, want); err != nil {
		t.Fatal(err)
	}
	got, cut, err := DecodeTraces(b)
	if err != nil || cut != 0 || !reflect.DeepEqual(got, FromTraces(want)) {
		t.Fatalf("decoded %v, cut %d: not what FromTraces reads in proto.Unmarshal's messages", err, cut)
	}
	kept, cut, err := cutRecords(b, recordPath, 20)
	if err != nil || cut != 10 {
		t.Fatalf("cut %d (%v), want 10", cut, err)
	}
	if got, _, _ = DecodeTraces(kept); len(got.Invocations) != 20 {
		t.Fatalf("%d invocations in the first 20 spans", len(got.Invocations))
	}
	LimitTraces(want, 20)
	if !reflect.DeepEqual(got, FromTraces(want)) {
		t.Error("cutting the bytes kept other spans than LimitTraces keeps")
	}
	if _, _, err := DecodeTraces([]byte{0x0a, 0x05, 0x01}); !errors.Is(err, ErrUnreadable) {
		t.Errorf("a truncated body: %v, want ErrUnreadable", err)
	}
}

// TestWeighJSONRefusesEmptyObjects: 4 MiB of "{}," would be 1.4 million
// messages; a body of real spans weighs far less than the limit.
func TestWeighJSONRefusesEmptyObjects(t *testing.T) {
	b := []byte(`{"resourceSpans":[{"scopeSpans":[{"spans":[`)
	for len(b) < 4<<20-8 {
		b = append(b, "{},"...)
	}
	b = append(b, "{}]}]}]}"...)
	if err := WeighJSON(b); !errors.Is(err, ErrTooCostly) {
		t.Errorf("4 MiB of empty spans in JSON: %v, want ErrTooCostly", err)
	}
	if err := WeighJSON([]byte(`{"resourceSpans":[{"scopeSpans":[{"spans":[{"name":"A {not an object}","attributes":[{"key":"faas.name","value":{"stringValue":"A"}}]}]}]}]}`)); err != nil {
		t.Errorf("one span: %v", err)
	}
}

// TestDecodedExportsKeepNothingOfTheBody: the receiver hands an export's
// buffer to the next export once it is decoded, so what decoding keeps
// must be copies. Overwriting the body afterwards changes nothing mapped.
func TestDecodedExportsKeepNothingOfTheBody(t *testing.T) {
	body := hostLikeExport()
	m, _, err := DecodeTraces(body)
	if err != nil {
		t.Fatal(err)
	}
	want := FromTraces(mustUnmarshal(t, body)).Invocations
	for i := range body {
		body[i] = 'x'
	}
	if got := m.Invocations; len(got) != 512 || !reflect.DeepEqual(got, want) {
		t.Fatalf("spans after their body was overwritten: %d invocations, first %+v; want 512, first %+v", len(got), got[0], want[0])
	}

	failed := record("Executed 'Functions.ProcessOrders' (Failed, Id=0c6bd5d3-3f3a-4c1b-9a4e-000000000001, Duration=12ms)",
		kv("InvocationId", "0c6bd5d3-3f3a-4c1b-9a4e-000000000001"), kv("Category", "Function.ProcessOrders"))
	logBody, _ := proto.Marshal(logs(failed))
	logReq, _, err := DecodeLogs(logBody)
	if err != nil {
		t.Fatal(err)
	}
	wantLogs := FromLogs(logReq).Invocations
	for i := range logBody {
		logBody[i] = 'x'
	}
	if got := FromLogs(logReq).Invocations; len(got) != 1 || !reflect.DeepEqual(got, wantLogs) {
		t.Fatalf("records after their body was overwritten: %+v; want %+v", got, wantLogs)
	}
}
