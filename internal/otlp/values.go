package otlp

import (
	"bytes"
	"strconv"
	"strings"
	"unsafe"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
)

// anyValue is an attribute's value as FromTraces reads it: a string, an
// integer, or any other kind, which reads as no value.
type anyValue struct {
	kind valueKind
	s    []byte
	i    int64
}

type valueKind uint8

const (
	noValue valueKind = iota
	stringValue
	intValue
)

func anyValueOf(v *commonpb.AnyValue) anyValue {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return anyValue{kind: stringValue, s: bytesOf(x.StringValue)}
	case *commonpb.AnyValue_IntValue:
		return anyValue{kind: intValue, i: x.IntValue}
	}
	return anyValue{}
}

// attrValue is an attribute read as text (an integer in decimal), and
// whether the attributes gave it twice with different texts (seen under
// load: host issue 11929). The first text stays; a later equal one, or
// any after an empty one, is no conflict.
type attrValue struct {
	s           []byte // a string's bytes,
	n           int64  // or an integer,
	isInt       bool
	conflicting bool
}

// add reads the attribute's next value; a nil a is a key not read.
func (a *attrValue) add(v anyValue) {
	switch {
	case a == nil, a.conflicting:
	case !a.isInt && len(a.s) == 0:
		*a = attrValue{s: v.s, n: v.i, isInt: v.kind == intValue}
	case !a.same(v):
		a.conflicting = true
	}
}

// same says whether v reads as the same text as a.
func (a *attrValue) same(v anyValue) bool {
	var buf [20]byte
	switch {
	case v.kind == noValue:
		return false // "" against a's text, which is not empty
	case a.isInt && v.kind == intValue:
		return a.n == v.i
	case a.isInt:
		return bytes.Equal(strconv.AppendInt(buf[:0], a.n, 10), v.s)
	case v.kind == intValue:
		return bytes.Equal(a.s, strconv.AppendInt(buf[:0], v.i, 10))
	}
	return bytes.Equal(a.s, v.s)
}

// text is a's text; an integer's is written into buf.
func (a *attrValue) text(buf *[20]byte) []byte {
	if a.isInt {
		return strconv.AppendInt(buf[:0], a.n, 10)
	}
	return a.s
}

// intAttr is an integer attribute: the first value given as an integer
// or as text (0 when the text is no number).
type intAttr struct {
	set bool
	n   int64
}

func (a *intAttr) add(v anyValue) {
	if a == nil || a.set {
		return
	}
	switch v.kind {
	case intValue:
		a.n, a.set = v.i, true
	case stringValue:
		a.n, _ = strconv.ParseInt(view(v.s), 10, 64)
		a.set = true
	}
}

// attr is the string value of key, and whether the attributes gave it
// twice with different values.
func attr(kvs []*commonpb.KeyValue, key string) (value string, conflicting bool) {
	var a attrValue
	for _, kv := range kvs {
		if kv.GetKey() == key {
			a.add(anyValueOf(kv.GetValue()))
		}
	}
	var buf [20]byte
	return string(a.text(&buf)), a.conflicting
}

// anyString is a value as text: a string, or an integer in decimal.
func anyString(v *commonpb.AnyValue) string {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_IntValue:
		return strconv.FormatInt(x.IntValue, 10)
	}
	return ""
}

// view is b read as a string, without a copy: for reading only. What is
// kept of it is copied (interned.keep, string(…)), because the export's
// bytes go to the next export once it is decoded.
func view(b []byte) string {
	return unsafe.String(unsafe.SliceData(b), len(b))
}

// bytesOf is s read as bytes, without a copy, never to be written.
func bytesOf(s string) []byte {
	return unsafe.Slice(unsafe.StringData(s), len(s))
}

// interned keeps one copy of each short text an export repeats on every
// invocation (its functions' names, its instances), instead of one each.
type interned map[string]string

func (in interned) keep(s string) string {
	if s == "" {
		return ""
	}
	if k, ok := in[s]; ok {
		return k
	}
	k := strings.Clone(s)
	in[k] = k
	return k
}
