package otlp

import (
	"errors"
	"reflect"
	"runtime"
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
// proto.Unmarshal builds them all) are cut on the wire to MaxRecords, and
// 2 million empty resources are refused before anything is built.
func TestDecodingCostsBoundedMemory(t *testing.T) {
	spans := emptySpans(2_000_000)
	var req *coltracepb.ExportTraceServiceRequest
	var cut int
	var err error
	got := allocated(func() { req, cut, err = DecodeTraces(spans) })
	if err != nil || cut != 2_000_000-MaxRecords || len(req.ResourceSpans[0].ScopeSpans[0].Spans) != MaxRecords {
		t.Fatalf("decoded %v, cut %d: want the first %d spans and the rest cut", err, cut, MaxRecords)
	}
	t.Logf("2,000,000 empty spans (%d bytes): %d MB allocated", len(spans), got>>20)
	if got > 64<<20 {
		t.Errorf("decoding 2,000,000 empty spans allocated %d MB, want at most 64", got>>20)
	}
	resources := emptyResources(2_000_000)
	got = allocated(func() { _, _, err = DecodeTraces(resources) })
	if !errors.Is(err, ErrTooCostly) {
		t.Fatalf("2,000,000 empty resources: %v, want ErrTooCostly", err)
	}
	t.Logf("2,000,000 empty resources (%d bytes): refused, %d MB allocated", len(resources), got>>20)
	if got > 64<<20 {
		t.Errorf("refusing 2,000,000 empty resources allocated %d MB, want at most 64", got>>20)
	}
}

// TestDecodeKeepsWhatUnmarshalKeeps: a host-shaped export decodes to
// exactly what proto.Unmarshal and LimitTraces make of it, with the same
// records cut, and nothing is cut under the limit.
func TestDecodeKeepsWhatUnmarshalKeeps(t *testing.T) {
	var spans []*tracepb.Span
	for range 25 {
		spans = append(spans, span("A", tracepb.Span_SPAN_KIND_SERVER, true, kv("faas.invocation_id", "0b8e-41"), kv("faas.name", "Functions.A")))
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
	if err != nil || cut != 0 || !proto.Equal(got, want) {
		t.Fatalf("decoded %v, cut %d: not what proto.Unmarshal made", err, cut)
	}
	kept, cut, err := cutRecords(b, recordPath, 20)
	if err != nil || cut != 10 {
		t.Fatalf("cut %d (%v), want 10", cut, err)
	}
	if err := proto.Unmarshal(kept, got); err != nil {
		t.Fatal(err)
	}
	LimitTraces(want, 20)
	if !proto.Equal(got, want) {
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
	req, _, err := DecodeTraces(body)
	if err != nil {
		t.Fatal(err)
	}
	want := FromTraces(req).Invocations
	for i := range body {
		body[i] = 'x'
	}
	if got := FromTraces(req).Invocations; len(got) != 512 || !reflect.DeepEqual(got, want) {
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
