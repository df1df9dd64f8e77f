package otlp

import (
	"unicode/utf8"
	"unsafe"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protowire"
)

// This file decodes the part of a trace export FromTraces reads, and
// skips the rest: a host's span carries a dozen attributes, events and
// ids Fusebox never looks at, and building them all was most of what an
// export cost in memory and in the collector's time. What is kept reads
// exactly as proto.Unmarshal would read it (a message field given twice
// is merged, a scalar's last value wins); the differential fuzz test
// holds the two to that. Bytes that are skipped are only walked, so an
// export proto.Unmarshal refuses for a bad string in a skipped field may
// be read here: nothing read from it is used.
//
// What it would build is bounded before anything is built: a body large
// enough to matter is walked first and what it could cost at most (every
// container, every attribute kept or not, every byte) added up; past
// MaxDecoded it is refused. What is built is charged as it is built, too.

// Which attributes FromTraces reads, of a resource and of a span.
var (
	resourceKeys = keySet("service.name", "service.instance.id")
	spanKeys     = keySet("faas.name", "faas.invocation_id", "faas.execution", "faas.instance", "http.response.status_code", "http.status_code")
)

// keySet maps each key to itself: a kept key is this string, not a copy.
func keySet(keys ...string) map[string]string {
	m := make(map[string]string, len(keys))
	for _, k := range keys {
		m[k] = k
	}
	return m
}

// leanTraces decodes b, an ExportTraceServiceRequest, keeping what
// FromTraces reads.
func leanTraces(b []byte) (*coltracepb.ExportTraceServiceRequest, error) {
	if len(b)*maxGrowth > MaxDecoded && leanCost(b) > MaxDecoded {
		return nil, ErrTooCostly
	}
	req := &coltracepb.ExportTraceServiceRequest{}
	var d lean
	err := eachField(b, func(num protowire.Number, typ protowire.Type, _, value []byte) error {
		if num != 1 || typ != protowire.BytesType {
			return nil
		}
		if err := d.charge(resourceSpansCost); err != nil {
			return err
		}
		rs := &tracepb.ResourceSpans{}
		req.ResourceSpans = append(req.ResourceSpans, rs)
		return d.resourceSpans(nested(value), rs)
	})
	return req, err
}

// The sizes lean charges, as built: each object and its slot in a slice.
var (
	resourceSpansCost = int(unsafe.Sizeof(tracepb.ResourceSpans{})) + 8
	resourceCost      = int(unsafe.Sizeof(resourcepb.Resource{})) + 8
	scopeSpansCost    = int(unsafe.Sizeof(tracepb.ScopeSpans{})+unsafe.Sizeof(commonpb.InstrumentationScope{})) + 16
	spanCost          = int(unsafe.Sizeof(tracepb.Span{})+unsafe.Sizeof(tracepb.Status{})) + 16
	keyValueCost      = int(unsafe.Sizeof(commonpb.KeyValue{})+unsafe.Sizeof(commonpb.AnyValue{})) + 24
)

// leanCost is the most leanTraces could build from b, walked without
// building anything.
func leanCost(b []byte) int {
	cost := len(b)
	count := func(b []byte, num protowire.Number, each int) {
		_ = eachField(b, func(n protowire.Number, typ protowire.Type, _, _ []byte) error {
			if n == num && typ == protowire.BytesType {
				cost += each
			}
			return nil
		})
	}
	_ = eachField(b, func(num protowire.Number, typ protowire.Type, _, value []byte) error {
		if num != 1 || typ != protowire.BytesType {
			return nil
		}
		cost += resourceSpansCost
		return eachField(nested(value), func(num protowire.Number, typ protowire.Type, _, value []byte) error {
			switch {
			case num == 1 && typ == protowire.BytesType:
				cost += resourceCost
				count(nested(value), 1, keyValueCost)
			case num == 2 && typ == protowire.BytesType:
				cost += scopeSpansCost
				_ = eachField(nested(value), func(num protowire.Number, typ protowire.Type, _, value []byte) error {
					if num == 2 && typ == protowire.BytesType {
						cost += spanCost
						count(nested(value), 9, keyValueCost)
					}
					return nil
				})
			}
			return nil
		})
	})
	return cost
}

// lean is one export's decoding: what it has built so far, in bytes, and
// the slabs it builds from (a few allocations an export instead of a few
// for every attribute: the garbage collector's work was most of decoding).
type lean struct {
	cost     int
	spans    slab[tracepb.Span]
	statuses slab[tracepb.Status]
	kvs      slab[commonpb.KeyValue]
	values   slab[commonpb.AnyValue]
	strs     slab[commonpb.AnyValue_StringValue]
	ints     slab[commonpb.AnyValue_IntValue]
	ids      slab[[24]byte] // a span's trace id (16 bytes) and span id (8)
}

// slab hands out pointers into arrays of T allocated 64 at a time: at most
// 63 unused, whatever the export.
type slab[T any] struct{ free []T }

func (s *slab[T]) next() *T {
	if len(s.free) == 0 {
		s.free = make([]T, 64)
	}
	p := &s.free[0]
	s.free = s.free[1:]
	return p
}

// charge adds n bytes built, or says the export costs too much.
func (d *lean) charge(n int) error {
	d.cost += n
	if d.cost > MaxDecoded {
		return ErrTooCostly
	}
	return nil
}

func (d *lean) resourceSpans(b []byte, rs *tracepb.ResourceSpans) error {
	return eachField(b, func(num protowire.Number, typ protowire.Type, _, value []byte) error {
		if typ != protowire.BytesType {
			return nil
		}
		switch num {
		case 1:
			if rs.Resource == nil {
				if err := d.charge(resourceCost); err != nil {
					return err
				}
				rs.Resource = &resourcepb.Resource{}
			}
			return eachField(nested(value), func(num protowire.Number, typ protowire.Type, _, value []byte) error {
				if num != 1 || typ != protowire.BytesType {
					return nil
				}
				return d.keyValue(nested(value), resourceKeys, &rs.Resource.Attributes)
			})
		case 2:
			if err := d.charge(scopeSpansCost); err != nil {
				return err
			}
			ss := &tracepb.ScopeSpans{}
			rs.ScopeSpans = append(rs.ScopeSpans, ss)
			return d.scopeSpans(nested(value), ss)
		}
		return nil
	})
}

func (d *lean) scopeSpans(b []byte, ss *tracepb.ScopeSpans) error {
	return eachField(b, func(num protowire.Number, typ protowire.Type, _, value []byte) error {
		if typ != protowire.BytesType {
			return nil
		}
		switch num {
		case 1:
			if err := d.charge(len(value)); err != nil {
				return err
			}
			if ss.Scope == nil {
				ss.Scope = &commonpb.InstrumentationScope{}
			}
			return eachField(nested(value), func(num protowire.Number, typ protowire.Type, _, value []byte) error {
				if num != 1 || typ != protowire.BytesType {
					return nil
				}
				return leanString(nested(value), &ss.Scope.Name)
			})
		case 2:
			// A span's name and id are charged with it: they are at
			// most its bytes.
			if err := d.charge(spanCost + len(value)); err != nil {
				return err
			}
			span := d.spans.next()
			ss.Spans = append(ss.Spans, span)
			return d.span(nested(value), span)
		}
		return nil
	})
}

func (d *lean) span(b []byte, span *tracepb.Span) error {
	var ids *[24]byte
	return eachField(b, func(num protowire.Number, typ protowire.Type, _, value []byte) error {
		switch {
		case num == 1 && typ == protowire.BytesType:
			span.TraceId = d.id(&ids, 0, 16, nested(value))
		case num == 2 && typ == protowire.BytesType:
			span.SpanId = d.id(&ids, 16, 24, nested(value))
		case num == 5 && typ == protowire.BytesType:
			return leanString(nested(value), &span.Name)
		case num == 6 && typ == protowire.VarintType:
			v, _ := protowire.ConsumeVarint(value)
			span.Kind = tracepb.Span_SpanKind(int32(v))
		case num == 7 && typ == protowire.Fixed64Type:
			span.StartTimeUnixNano, _ = protowire.ConsumeFixed64(value)
		case num == 8 && typ == protowire.Fixed64Type:
			span.EndTimeUnixNano, _ = protowire.ConsumeFixed64(value)
		case num == 9 && typ == protowire.BytesType:
			return d.keyValue(nested(value), spanKeys, &span.Attributes)
		case num == 15 && typ == protowire.BytesType:
			if span.Status == nil {
				span.Status = d.statuses.next()
			}
			return d.status(nested(value), span.Status)
		}
		return nil
	})
}

// id copies a span's id (v) out of the body: into its place [from:to) of
// the span's ids from the slab when it is of its size or shorter (as the
// host's are), else into a copy of its own.
func (d *lean) id(ids **[24]byte, from, to int, v []byte) []byte {
	if len(v) > to-from {
		return append([]byte(nil), v...)
	}
	if *ids == nil {
		*ids = d.ids.next()
	}
	n := copy((*ids)[from:to], v)
	return (*ids)[from : from+n : from+n]
}

func (d *lean) status(b []byte, st *tracepb.Status) error {
	return eachField(b, func(num protowire.Number, typ protowire.Type, _, value []byte) error {
		switch {
		case num == 2 && typ == protowire.BytesType:
			return leanString(nested(value), &st.Message)
		case num == 3 && typ == protowire.VarintType:
			v, _ := protowire.ConsumeVarint(value)
			st.Code = tracepb.Status_StatusCode(int32(v))
		}
		return nil
	})
}

// leanKeyValue keeps a key-value whose key is one of keys. Its value is
// kept when it is a string or an integer, the kinds FromTraces reads; any
// other kind is kept as an empty value, so that a key given twice with
// different kinds still reads as conflicting.
func (d *lean) keyValue(b []byte, keys map[string]string, into *[]*commonpb.KeyValue) error {
	var key, val []byte
	var keyed, valued bool
	err := eachField(b, func(num protowire.Number, typ protowire.Type, _, value []byte) error {
		if typ != protowire.BytesType {
			return nil
		}
		switch num {
		case 1:
			key, keyed = nested(value), true
		case 2:
			// A message field given twice is merged, and merging is
			// reading the two one after the other (copied, never
			// written into the body).
			if !valued {
				val, valued = nested(value), true
			} else {
				val = append(val[:len(val):len(val)], nested(value)...)
			}
		}
		return nil
	})
	canonical, wanted := keys[string(key)]
	if err != nil || !keyed || !wanted {
		return err
	}
	if err := d.charge(keyValueCost + len(b)); err != nil {
		return err
	}
	kv := d.kvs.next()
	kv.Key = canonical
	if valued {
		kv.Value = d.values.next()
		if err := d.anyValue(val, kv.Value); err != nil {
			return err
		}
	}
	if *into == nil {
		*into = make([]*commonpb.KeyValue, 0, 4)
	}
	*into = append(*into, kv)
	return nil
}

// anyValue reads the oneof's last case, as proto.Unmarshal does.
func (d *lean) anyValue(b []byte, v *commonpb.AnyValue) error {
	return eachField(b, func(num protowire.Number, typ protowire.Type, _, value []byte) error {
		switch {
		case num == 1 && typ == protowire.BytesType:
			sv := d.strs.next()
			if err := leanString(nested(value), &sv.StringValue); err != nil {
				return err
			}
			v.Value = sv
		case num == 3 && typ == protowire.VarintType:
			n, _ := protowire.ConsumeVarint(value)
			iv := d.ints.next()
			iv.IntValue = int64(n)
			v.Value = iv
		case num == 2 && typ == protowire.VarintType,
			num == 4 && typ == protowire.Fixed64Type,
			num >= 5 && num <= 7 && typ == protowire.BytesType:
			// Another kind, which FromTraces reads as no value. A
			// nested value given twice is merged, not replaced; either
			// way it is no string or integer.
			v.Value = nil
		}
		return nil
	})
}

// leanString is a proto3 string: valid UTF-8, or the export is refused.
func leanString(b []byte, into *string) error {
	if !utf8.Valid(b) {
		return ErrUnreadable
	}
	*into = string(b)
	return nil
}
