package otlp

import (
	"reflect"
	"strings"
	"testing"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// TestFailedCallsNameWhatTheyCalled: a failed client or producer span is
// a dependency of its trace's invocation, named by peer.service, else
// server.address (or the older net.peer.name), else its database; both
// decoders read the same.
func TestFailedCallsNameWhatTheyCalled(t *testing.T) {
	client, producer, server := tracepb.Span_SPAN_KIND_CLIENT, tracepb.Span_SPAN_KIND_PRODUCER, tracepb.Span_SPAN_KIND_SERVER
	trace := func(b byte, s *tracepb.Span) *tracepb.Span {
		s.TraceId = []byte{b, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
		return s
	}
	const t1, t2 = "0102030405060708090a0b0c0d0e0f10", "0202030405060708090a0b0c0d0e0f10"
	cases := []struct {
		name string
		s    *tracepb.Span
		want []Dependency
	}{
		{"an HttpClient call (semantic conventions 1.21 on)", trace(1, span("GET", client, true, kv("server.address", "Inventory-DB.example.com"), kv("url.full", "https://inventory-db.example.com/stock"))),
			[]Dependency{{"inventory-db.example.com", t1}}},
		{"an older instrumentation's net.peer.name", trace(1, span("GET", client, true, kv("net.peer.name", "stock.internal"))),
			[]Dependency{{"stock.internal", t1}}},
		{"peer.service names the service over its address", trace(2, span("SELECT", client, true, kv("peer.service", "inventory-db"), kv("server.address", "10.0.0.7"), kv("db.name", "inventory"))),
			[]Dependency{{"inventory-db", t2}}},
		{"a database named alone (db.namespace, 1.26 on)", trace(1, span("SELECT", client, true, kv("db.system", "mssql"), kv("db.namespace", "Inventory"))),
			[]Dependency{{"inventory", t1}}},
		{"a database named alone (db.name)", trace(1, span("SELECT", client, true, kv("db.name", "inventory"))),
			[]Dependency{{"inventory", t1}}},
		{"a Service Bus send that failed", trace(1, span("send", producer, true, kv("server.address", "orders.servicebus.windows.net"))),
			[]Dependency{{"orders.servicebus.windows.net", t1}}},
		{"a call that succeeded", trace(1, span("GET", client, false, kv("server.address", "inventory-db.example.com"))), nil},
		{"a server span is no call", trace(1, span("GET /health", server, true, kv("server.address", "func-orders.azurewebsites.net"))), nil},
		{"a URL is no target", trace(1, span("GET", client, true, kv("peer.service", "https://inventory-db.example.com/stock"))), nil},
		{"words are no target", trace(1, span("GET", client, true, kv("server.address", "the inventory database"))), nil},
		{"a target longer than a host name", trace(1, span("GET", client, true, kv("server.address", strings.Repeat("a", MaxTarget+1)))), nil},
		{"a call without a trace", span("GET", client, true, kv("server.address", "inventory-db.example.com")), nil},
	}
	for _, tc := range cases {
		req := traces("System.Net.Http", tc.s)
		got := FromTraces(req).Dependencies
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: FromTraces found %v, want %v", tc.name, got, tc.want)
		}
		b, err := proto.Marshal(req)
		if err != nil {
			t.Fatal(err)
		}
		m, _, err := DecodeTraces(b)
		if err != nil || !reflect.DeepEqual(m.Dependencies, tc.want) {
			t.Errorf("%s: DecodeTraces found %v (%v), want %v", tc.name, m.Dependencies, err, tc.want)
		}
	}
}

// TestAnExportKeepsEachFailedCallOnceAndBounded: the same target in the
// same trace is one call; past MaxDependencies the rest are dropped.
func TestAnExportKeepsEachFailedCallOnceAndBounded(t *testing.T) {
	var spans []*tracepb.Span
	for i := range MaxDependencies + 10 {
		for range 3 {
			s := span("GET", tracepb.Span_SPAN_KIND_CLIENT, true, kv("server.address", "inventory-db.example.com"))
			s.TraceId = []byte{byte(i), byte(i >> 8), 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
			spans = append(spans, s)
		}
	}
	b, err := proto.Marshal(traces("System.Net.Http", spans...))
	if err != nil {
		t.Fatal(err)
	}
	m, _, err := DecodeTraces(b)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Dependencies) != MaxDependencies {
		t.Fatalf("kept %d calls; want %d, each trace once", len(m.Dependencies), MaxDependencies)
	}
	if m.Dependencies[0].Trace == m.Dependencies[1].Trace {
		t.Errorf("one trace's call kept twice: %v", m.Dependencies[:2])
	}
}

// A span whose kind comes after its attributes (no SDK writes one so,
// but the bytes may) reads as proto.Unmarshal reads it: the last kind
// decides, and a call's attributes are read whatever came first.
func TestACallsKindAfterItsAttributesReadsAsUnmarshalReadsIt(t *testing.T) {
	attrs := span("GET", tracepb.Span_SPAN_KIND_UNSPECIFIED, true, kv("server.address", "inventory-db.example.com"))
	attrs.TraceId = []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	for _, kinds := range [][]tracepb.Span_SpanKind{
		{tracepb.Span_SPAN_KIND_SERVER, tracepb.Span_SPAN_KIND_CLIENT},
		{tracepb.Span_SPAN_KIND_CLIENT, tracepb.Span_SPAN_KIND_SERVER},
	} {
		// The span as marshalled, then its kind written twice after its
		// attributes: kind is field 6, a varint.
		b, err := proto.Marshal(attrs)
		if err != nil {
			t.Fatal(err)
		}
		first := append(protowire.AppendTag(nil, 6, protowire.VarintType), byte(kinds[0]))
		b = append(append(first, b...), append(protowire.AppendTag(nil, 6, protowire.VarintType), byte(kinds[1]))...)
		var one tracepb.Span
		if err := proto.Unmarshal(b, &one); err != nil {
			t.Fatal(err)
		}
		req := traces("System.Net.Http", &one)
		want := FromTraces(req).Dependencies
		var body []byte
		body = protowire.AppendTag(body, 2, protowire.BytesType) // scope_spans
		scope := protowire.AppendTag(nil, 2, protowire.BytesType)
		scope = protowire.AppendBytes(scope, b)
		body = protowire.AppendBytes(body, scope)
		export := protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), body)
		got, _, err := DecodeTraces(export)
		if err != nil || !reflect.DeepEqual(got.Dependencies, want) {
			t.Errorf("kinds %v: DecodeTraces found %v (%v); proto.Unmarshal and FromTraces %v", kinds, got.Dependencies, err, want)
		}
		if (kinds[1] == tracepb.Span_SPAN_KIND_CLIENT) != (len(want) == 1) {
			t.Errorf("kinds %v: %v; want a call only when the last kind is a client's", kinds, want)
		}
	}
}
