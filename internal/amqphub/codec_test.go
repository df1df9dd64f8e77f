package amqphub

import (
	"reflect"
	"testing"
	"time"
)

func TestValuesSurviveARoundTrip(t *testing.T) {
	at := time.UnixMilli(1764583200123).UTC()
	in := described{0x77, mapVal{{"name", "orders"}, {"last", int64(-1)}, {"count", int32(4)}, {"at", at}, {"empty", true},
		{symbol("ids"), list{"0", uint32(7), nil, binaryVal("x")}}}}
	e := &encoder{}
	e.value(in)
	d := &decoder{b: e.b}
	out, err := d.value()
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(in, out) || d.i != len(e.b) {
		t.Fatalf("decoded %#v (%d of %d bytes), want %#v", out, d.i, len(e.b), in)
	}
}

// Peers choose the short encodings; they decode to the same values.
func TestShortEncodingsDecode(t *testing.T) {
	for _, tc := range []struct {
		b    []byte
		want any
	}{
		{[]byte{0x43}, uint32(0)},
		{[]byte{0x52, 9}, uint32(9)},
		{[]byte{0x53, 0x10}, uint64(16)},
		{[]byte{0x54, 0xff}, int32(-1)},
		{[]byte{0x55, 0xfe}, int64(-2)},
		{[]byte{0xa1, 2, 'h', 'i'}, "hi"},
		{[]byte{0xa3, 1, 'x'}, symbol("x")},
		{[]byte{0xc0, 3, 2, 0x41, 0x40}, list{true, nil}},
		{[]byte{0xc1, 5, 2, 0xa1, 1, 'k', 0x42}, mapVal{{"k", false}}},
		{[]byte{0xe0, 6, 2, 0xa3, 1, 'a', 1, 'b'}, list{symbol("a"), symbol("b")}},
	} {
		got, err := (&decoder{b: tc.b}).value()
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("% x: got %#v, %v; want %#v", tc.b, got, err, tc.want)
		}
	}
}

func TestDeepNestingIsRefused(t *testing.T) {
	var b []byte
	for range 1000 {
		b = append(b, 0xc0, 0xff, 1)
	}
	if _, err := (&decoder{b: b}).value(); err == nil {
		t.Fatal("a thousand nested lists decoded")
	}
}

// Whatever a peer sends, decoding ends with a value or an error.
func FuzzDecode(f *testing.F) {
	f.Add([]byte{0x00, 0x53, 0x10, 0xc0, 3, 1, 0xa1, 0})
	f.Add([]byte{0xd0, 0, 0, 0, 8, 0xff, 0xff, 0xff, 0xff})
	f.Add([]byte{0xf0, 0, 0, 0, 5, 0, 0, 0, 2, 0xb1})
	f.Fuzz(func(t *testing.T, b []byte) {
		d := &decoder{b: b}
		_, _ = d.value()
		if d.i > len(b) {
			t.Fatalf("read %d of %d bytes", d.i, len(b))
		}
	})
}
