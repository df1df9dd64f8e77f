package otlp

import (
	"unicode/utf8"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protowire"
)

// This file reads a trace export's bytes straight into the invocations
// FromTraces would find in the messages proto.Unmarshal builds of them,
// and builds no message at all: a host's span carries a dozen attributes,
// events and ids Fusebox never looks at, and building even the few it
// reads was most of what an export cost the collector. What is read reads
// as proto.Unmarshal would read it (a message field given twice is
// merged, a scalar's last value wins); the differential fuzz test holds
// the two to that. Bytes that are skipped are only walked, so an export
// proto.Unmarshal refuses for a bad string in a skipped field may be
// read here: nothing read from it is kept.
//
// What it keeps is bounded without weighing anything first: at most
// MaxRecords spans are read (the rest are only counted), and each keeps
// at most one Invocation with a function's name (interned), an id (at
// most MaxID bytes), an instance (MaxInstance, interned), an error text
// (MaxSample) and a traceparent: under 10 MB for the largest export,
// however its bytes are arranged. Nothing points into the body.

// DecodeTraces reads an ExportTraceServiceRequest's bytes into what
// FromTraces finds in it, reading its first MaxRecords spans; cut says
// how many spans past those were left unread.
func DecodeTraces(b []byte) (m Mapped, cut int, err error) {
	d := traceReader{m: Mapped{Source: Traces}, names: interned{}, left: MaxRecords}
	// The spans are counted first, walking only the containers' fields
	// (no span is read): grown by appending instead, a host's batch cost
	// twice the memory (225 kB against 117 kB) for the same time.
	d.m.Invocations = make([]Invocation, 0, min(countRecords(b, recordPath), MaxRecords))
	r := fields{b: b}
	for f, ok := r.next(); ok; f, ok = r.next() {
		if f.num == 1 && f.typ == protowire.BytesType {
			if err := d.resourceSpans(f.v); err != nil {
				return Mapped{}, 0, err
			}
		}
	}
	if r.bad {
		return Mapped{}, 0, ErrUnreadable
	}
	return d.m, d.cut, nil
}

// traceReader is one export's reading.
type traceReader struct {
	m     Mapped
	names interned
	left  int // spans still to read
	cut   int // spans past MaxRecords, unread
	span  spanFields
}

func (d *traceReader) resourceSpans(b []byte) error {
	// The resource may come after its spans; its parts are merged.
	var res resourceFields
	r := fields{b: b}
	for f, ok := r.next(); ok; f, ok = r.next() {
		if f.num != 1 || f.typ != protowire.BytesType {
			continue
		}
		attrs := fields{b: f.v}
		for a, ok := attrs.next(); ok; a, ok = attrs.next() {
			if a.num == 1 && a.typ == protowire.BytesType {
				kv, err := readKeyValue(a.v)
				if err != nil {
					return err
				}
				if err := read(res.slot(kv.key), nil, kv); err != nil {
					return err
				}
			}
		}
		if attrs.bad {
			return ErrUnreadable
		}
	}
	if r.bad {
		return ErrUnreadable
	}
	var nameDigits, instanceDigits [20]byte
	name, instance := cut(res.serviceName.text(&nameDigits), maxServiceName), cut(res.instance.text(&instanceDigits), MaxInstance)
	if !utf8.Valid(name) || !utf8.Valid(instance) {
		return ErrUnreadable
	}
	d.m.serviceName(view(name))
	kept := d.names.keep(view(instance))
	r = fields{b: b}
	for f, ok := r.next(); ok; f, ok = r.next() {
		if f.num == 2 && f.typ == protowire.BytesType {
			if err := d.scopeSpans(f.v, kept); err != nil {
				return err
			}
		}
	}
	return nil
}

func (d *traceReader) scopeSpans(b []byte, instance string) error {
	// The scope may come after its spans; its name's last value wins.
	var name []byte
	r := fields{b: b}
	for f, ok := r.next(); ok; f, ok = r.next() {
		if f.num != 1 || f.typ != protowire.BytesType {
			continue
		}
		scope := fields{b: f.v}
		for s, ok := scope.next(); ok; s, ok = scope.next() {
			if s.num == 1 && s.typ == protowire.BytesType {
				name = s.v
			}
		}
		if scope.bad {
			return ErrUnreadable
		}
	}
	if r.bad {
		return ErrUnreadable
	}
	kind := scopeOf(name)
	r = fields{b: b}
	for f, ok := r.next(); ok; f, ok = r.next() {
		if f.num != 2 || f.typ != protowire.BytesType {
			continue
		}
		if d.left == 0 {
			d.cut++
			continue
		}
		d.left--
		d.m.Records++
		if err := d.readSpan(f.v); err != nil {
			return err
		}
		inv, why, ok := fromSpan(&d.span, kind, d.names)
		if ok && why == "" && !(utf8.ValidString(inv.Sample) && utf8.ValidString(inv.Instance)) {
			return ErrUnreadable
		}
		d.m.add(inv, why, ok, instance)
		if !ok {
			d.m.dependency(&d.span)
		}
	}
	return nil
}

// readSpan reads a span's fields into d.span.
func (d *traceReader) readSpan(b []byte) error {
	s := &d.span
	s.reset()
	var exception []byte // the last "exception" event
	r := fields{b: b}
	for f, ok := r.next(); ok; f, ok = r.next() {
		switch {
		case f.num == 1 && f.typ == protowire.BytesType:
			s.traceID = f.v
		case f.num == 2 && f.typ == protowire.BytesType:
			s.spanID = f.v
		case f.num == 5 && f.typ == protowire.BytesType:
			s.name = f.v
		case f.num == 6 && f.typ == protowire.VarintType:
			v, _ := protowire.ConsumeVarint(f.v)
			s.kind = tracepb.Span_SpanKind(int32(v))
		case f.num == 7 && f.typ == protowire.Fixed64Type:
			s.start, _ = protowire.ConsumeFixed64(f.v)
		case f.num == 8 && f.typ == protowire.Fixed64Type:
			s.end, _ = protowire.ConsumeFixed64(f.v)
		case f.num == 9 && f.typ == protowire.BytesType:
			kv, err := readKeyValue(f.v)
			if err != nil {
				return err
			}
			text, number := s.slot(kv.key)
			if err := read(text, number, kv); err != nil {
				return err
			}
		case f.num == 11 && f.typ == protowire.BytesType:
			name, err := eventName(f.v)
			if err != nil {
				return err
			}
			if view(name) == "exception" {
				exception = f.v
			}
		case f.num == 15 && f.typ == protowire.BytesType:
			// A status given twice is merged: its fields read in turn.
			st := fields{b: f.v}
			for g, ok := st.next(); ok; g, ok = st.next() {
				switch {
				case g.num == 2 && g.typ == protowire.BytesType:
					s.message = g.v
				case g.num == 3 && g.typ == protowire.VarintType:
					v, _ := protowire.ConsumeVarint(g.v)
					s.code = tracepb.Status_StatusCode(int32(v))
				}
			}
			if st.bad {
				return ErrUnreadable
			}
		}
	}
	if r.bad {
		return ErrUnreadable
	}
	if s.callsSkipped && s.mayCall() {
		// The kind came after the call's attributes: read them again.
		if err := readAttributes(b, 9, s.callSlot); err != nil {
			return err
		}
	}
	if exception != nil {
		return readAttributes(exception, 3, s.exceptionSlot)
	}
	return nil
}

// readAttributes reads the key-values of b's field num (a span's
// attributes, an event's) into where slot says.
func readAttributes(b []byte, num protowire.Number, slot func(key []byte) *attrValue) error {
	r := fields{b: b}
	for f, ok := r.next(); ok; f, ok = r.next() {
		if f.num == num && f.typ == protowire.BytesType {
			kv, err := readKeyValue(f.v)
			if err != nil {
				return err
			}
			if err := read(slot(kv.key), nil, kv); err != nil {
				return err
			}
		}
	}
	return nil
}

// eventName is a span event's name (its last, as proto reads it).
func eventName(b []byte) ([]byte, error) {
	var name []byte
	r := fields{b: b}
	for f, ok := r.next(); ok; f, ok = r.next() {
		if f.num == 2 && f.typ == protowire.BytesType {
			name = f.v
		}
	}
	if r.bad {
		return nil, ErrUnreadable
	}
	return name, nil
}

// keyValue is a KeyValue walked but its value not yet read: its key's
// last value, and its value's parts.
type keyValue struct {
	key   []byte
	b     []byte // the KeyValue's bytes
	one   []byte // its value's only part, when it has one
	parts int
}

func readKeyValue(b []byte) (keyValue, error) {
	kv := keyValue{b: b}
	r := fields{b: b}
	for f, ok := r.next(); ok; f, ok = r.next() {
		switch {
		case f.typ != protowire.BytesType:
		case f.num == 1:
			kv.key = f.v
		case f.num == 2:
			kv.one = f.v
			kv.parts++
		}
	}
	if r.bad {
		return keyValue{}, ErrUnreadable
	}
	return kv, nil
}

// value reads the value's parts in turn (a message given twice is merged;
// the oneof's last case wins, and a nested kind given twice is merged into
// itself: either way no string or integer). Only the values of keys
// Fusebox reads are read at all.
func (kv keyValue) value() (v anyValue, err error) {
	if kv.parts <= 1 {
		return readAnyValue(kv.one, v)
	}
	r := fields{b: kv.b}
	for f, ok := r.next(); ok; f, ok = r.next() {
		if f.num == 2 && f.typ == protowire.BytesType {
			if v, err = readAnyValue(f.v, v); err != nil {
				return anyValue{}, err
			}
		}
	}
	return v, nil
}

// read reads kv's value into text or number, when either is a slot.
func read(text *attrValue, number *intAttr, kv keyValue) error {
	if text == nil && number == nil {
		return nil
	}
	v, err := kv.value()
	if err != nil {
		return err
	}
	text.add(v)
	number.add(v)
	return nil
}

// readAnyValue reads one part of an AnyValue over what earlier parts read.
func readAnyValue(b []byte, v anyValue) (anyValue, error) {
	r := fields{b: b}
	for p, ok := r.next(); ok; p, ok = r.next() {
		switch {
		case p.num == 1 && p.typ == protowire.BytesType:
			v = anyValue{kind: stringValue, s: p.v}
		case p.num == 3 && p.typ == protowire.VarintType:
			n, _ := protowire.ConsumeVarint(p.v)
			v = anyValue{kind: intValue, i: int64(n)}
		case p.num == 2 && p.typ == protowire.VarintType,
			p.num == 4 && p.typ == protowire.Fixed64Type,
			p.num >= 5 && p.num <= 7 && p.typ == protowire.BytesType:
			v = anyValue{}
		}
	}
	if r.bad {
		return anyValue{}, ErrUnreadable
	}
	return v, nil
}

// field is one field of a message: its number, wire type and value (a
// length-delimited field's contents, without their length).
type field struct {
	num protowire.Number
	typ protowire.Type
	v   []byte
}

// fields walks a message's fields in order; bad says the bytes stopped
// reading before their end.
type fields struct {
	b   []byte
	bad bool
}

func (r *fields) next() (field, bool) {
	b := r.b
	if len(b) == 0 || r.bad {
		return field{}, false
	}
	// Most fields are a one-byte tag of a length-delimited field and a
	// one-byte length: read without the general decoding.
	if len(b) >= 2 && b[0] >= 1<<3 && b[0] < 0x80 && b[0]&7 == byte(protowire.BytesType) && b[1] < 0x80 && 2+int(b[1]) <= len(b) {
		n := 2 + int(b[1])
		r.b = b[n:]
		return field{protowire.Number(b[0] >> 3), protowire.BytesType, b[2:n]}, true
	}
	num, typ, n := protowire.ConsumeTag(r.b)
	if n < 0 {
		r.bad = true
		return field{}, false
	}
	var v []byte
	var m int
	if typ == protowire.BytesType {
		v, m = protowire.ConsumeBytes(r.b[n:])
	} else {
		m = protowire.ConsumeFieldValue(num, typ, r.b[n:])
		if m >= 0 {
			v = r.b[n : n+m]
		}
	}
	if m < 0 {
		r.bad = true
		return field{}, false
	}
	r.b = r.b[n+m:]
	return field{num, typ, v}, true
}
