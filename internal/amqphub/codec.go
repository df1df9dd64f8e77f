package amqphub

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"time"
)

// The AMQP 1.0 type system (OASIS AMQP 1.0, part 1), as far as an Event
// Hubs management exchange needs it. Decoding accepts every encoding a
// peer may choose; encoding picks one fixed form per type.

type (
	symbol    string
	binaryVal []byte
	list      []any
	// pair keeps a map's entries in order, as they were on the wire.
	pair      struct{ key, value any }
	mapVal    []pair
	described struct {
		code  uint64 // numeric descriptor; symbolic ones are not used here
		value any
	}
	// strArray is an array of strings (partition ids).
	strArray []string
	// symArray is an array of symbols (SASL mechanisms).
	symArray []symbol
)

func (m mapVal) get(key string) (any, bool) {
	for _, p := range m {
		switch k := p.key.(type) {
		case string:
			if k == key {
				return p.value, true
			}
		case symbol:
			if string(k) == key {
				return p.value, true
			}
		}
	}
	return nil, false
}

var errShort = errors.New("amqphub: value cut short")

type decoder struct {
	b     []byte
	i     int
	depth int
}

// maxDepth bounds nesting: the exchanges here nest four deep.
const maxDepth = 32

func (d *decoder) take(n int) ([]byte, error) {
	if n < 0 || d.i+n > len(d.b) {
		return nil, errShort
	}
	out := d.b[d.i : d.i+n]
	d.i += n
	return out, nil
}

func (d *decoder) byte() (byte, error) {
	b, err := d.take(1)
	if err != nil {
		return 0, err
	}
	return b[0], nil
}

func (d *decoder) value() (any, error) {
	d.depth++
	defer func() { d.depth-- }()
	if d.depth > maxDepth {
		return nil, errors.New("amqphub: values nested too deep")
	}
	code, err := d.byte()
	if err != nil {
		return nil, err
	}
	if code == 0x00 {
		desc, err := d.value()
		if err != nil {
			return nil, err
		}
		v, err := d.value()
		if err != nil {
			return nil, err
		}
		n, ok := asUint64(desc)
		if !ok {
			// A symbolic descriptor: keep the value, forget the name.
			return described{code: math.MaxUint64, value: v}, nil
		}
		return described{code: n, value: v}, nil
	}
	return d.typed(code)
}

// typed decodes one value of the given constructor (arrays share one
// constructor between all their elements).
func (d *decoder) typed(code byte) (any, error) {
	fixed := func(n int) ([]byte, error) { return d.take(n) }
	switch code {
	case 0x40:
		return nil, nil
	case 0x41:
		return true, nil
	case 0x42:
		return false, nil
	case 0x56:
		b, err := d.byte()
		return b != 0, err
	case 0x50:
		b, err := d.byte()
		return b, err
	case 0x51:
		b, err := d.byte()
		return int8(b), err
	case 0x60, 0x61:
		b, err := fixed(2)
		if err != nil {
			return nil, err
		}
		if code == 0x61 {
			return int16(binary.BigEndian.Uint16(b)), nil
		}
		return binary.BigEndian.Uint16(b), nil
	case 0x43:
		return uint32(0), nil
	case 0x52:
		b, err := d.byte()
		return uint32(b), err
	case 0x70:
		b, err := fixed(4)
		if err != nil {
			return nil, err
		}
		return binary.BigEndian.Uint32(b), nil
	case 0x44:
		return uint64(0), nil
	case 0x53:
		b, err := d.byte()
		return uint64(b), err
	case 0x80:
		b, err := fixed(8)
		if err != nil {
			return nil, err
		}
		return binary.BigEndian.Uint64(b), nil
	case 0x54:
		b, err := d.byte()
		return int32(int8(b)), err
	case 0x71:
		b, err := fixed(4)
		if err != nil {
			return nil, err
		}
		return int32(binary.BigEndian.Uint32(b)), nil
	case 0x55:
		b, err := d.byte()
		return int64(int8(b)), err
	case 0x81:
		b, err := fixed(8)
		if err != nil {
			return nil, err
		}
		return int64(binary.BigEndian.Uint64(b)), nil
	case 0x72:
		b, err := fixed(4)
		if err != nil {
			return nil, err
		}
		return math.Float32frombits(binary.BigEndian.Uint32(b)), nil
	case 0x82:
		b, err := fixed(8)
		if err != nil {
			return nil, err
		}
		return math.Float64frombits(binary.BigEndian.Uint64(b)), nil
	case 0x73:
		b, err := fixed(4)
		if err != nil {
			return nil, err
		}
		return rune(binary.BigEndian.Uint32(b)), nil
	case 0x83:
		b, err := fixed(8)
		if err != nil {
			return nil, err
		}
		return time.UnixMilli(int64(binary.BigEndian.Uint64(b))).UTC(), nil
	case 0x74, 0x84, 0x94, 0x98: // decimal32/64/128, uuid: kept raw
		n := 16
		switch code {
		case 0x74:
			n = 4
		case 0x84:
			n = 8
		}
		b, err := fixed(n)
		if err != nil {
			return nil, err
		}
		return binaryVal(append([]byte(nil), b...)), nil
	case 0xa0, 0xa1, 0xa3, 0xb0, 0xb1, 0xb3:
		var n int
		if code < 0xb0 {
			b, err := d.byte()
			if err != nil {
				return nil, err
			}
			n = int(b)
		} else {
			b, err := fixed(4)
			if err != nil {
				return nil, err
			}
			n = int(binary.BigEndian.Uint32(b))
		}
		b, err := d.take(n)
		if err != nil {
			return nil, err
		}
		switch code & 0x0f {
		case 0x1:
			return string(b), nil
		case 0x3:
			return symbol(b), nil
		}
		return binaryVal(append([]byte(nil), b...)), nil
	case 0x45:
		return list{}, nil
	case 0xc0, 0xc1, 0xd0, 0xd1:
		count, err := d.compound(code >= 0xd0)
		if err != nil {
			return nil, err
		}
		items := make([]any, 0, min(count, 64))
		for range count {
			v, err := d.value()
			if err != nil {
				return nil, err
			}
			items = append(items, v)
		}
		if code&0x0f == 0 {
			return list(items), nil
		}
		if len(items)%2 != 0 {
			return nil, errors.New("amqphub: a map with an odd number of items")
		}
		m := make(mapVal, 0, len(items)/2)
		for i := 0; i < len(items); i += 2 {
			m = append(m, pair{items[i], items[i+1]})
		}
		return m, nil
	case 0xe0, 0xf0:
		count, err := d.compound(code == 0xf0)
		if err != nil {
			return nil, err
		}
		elem, err := d.byte()
		if err != nil {
			return nil, err
		}
		if elem == 0x00 { // described elements: drop the descriptor
			if _, err := d.value(); err != nil {
				return nil, err
			}
			if elem, err = d.byte(); err != nil {
				return nil, err
			}
		}
		items := make([]any, 0, min(count, 64))
		for range count {
			v, err := d.typed(elem)
			if err != nil {
				return nil, err
			}
			items = append(items, v)
		}
		return list(items), nil
	}
	return nil, fmt.Errorf("amqphub: unknown type code 0x%02x", code)
}

// compound reads a list's, map's or array's size and count.
func (d *decoder) compound(wide bool) (int, error) {
	if !wide {
		b, err := d.take(2)
		if err != nil {
			return 0, err
		}
		return int(b[1]), nil
	}
	b, err := d.take(8)
	if err != nil {
		return 0, err
	}
	n := binary.BigEndian.Uint32(b[4:])
	if int(n) > len(d.b) { // every item takes at least a byte
		return 0, errShort
	}
	return int(n), nil
}

func asUint64(v any) (uint64, bool) {
	switch n := v.(type) {
	case uint64:
		return n, true
	case uint32:
		return uint64(n), true
	case uint16:
		return uint64(n), true
	case uint8:
		return uint64(n), true
	}
	return 0, false
}

// field is item i of a performative's list, nil when left out.
func field(l list, i int) any {
	if i < len(l) {
		return l[i]
	}
	return nil
}

func fieldUint(l list, i int) uint32 {
	n, _ := asUint64(field(l, i))
	return uint32(n)
}

func fieldString(l list, i int) string {
	switch s := field(l, i).(type) {
	case string:
		return s
	case symbol:
		return string(s)
	}
	return ""
}

// Explicitly typed values, for fields whose type the peer checks.
type (
	ubyte  uint8
	ushort uint16
)

type encoder struct{ b []byte }

func (e *encoder) u32(n uint32) { e.b = binary.BigEndian.AppendUint32(e.b, n) }

func (e *encoder) value(v any) {
	switch x := v.(type) {
	case nil:
		e.b = append(e.b, 0x40)
	case bool:
		if x {
			e.b = append(e.b, 0x41)
		} else {
			e.b = append(e.b, 0x42)
		}
	case ubyte:
		e.b = append(e.b, 0x50, byte(x))
	case uint8:
		e.b = append(e.b, 0x50, x)
	case ushort:
		e.b = binary.BigEndian.AppendUint16(append(e.b, 0x60), uint16(x))
	case uint16:
		e.b = binary.BigEndian.AppendUint16(append(e.b, 0x60), x)
	case uint32:
		e.b = append(e.b, 0x70)
		e.u32(x)
	case uint64:
		e.b = binary.BigEndian.AppendUint64(append(e.b, 0x80), x)
	case int32:
		e.b = append(e.b, 0x71)
		e.u32(uint32(x))
	case int64:
		e.b = binary.BigEndian.AppendUint64(append(e.b, 0x81), uint64(x))
	case time.Time:
		e.b = binary.BigEndian.AppendUint64(append(e.b, 0x83), uint64(x.UnixMilli()))
	case string:
		e.b = append(e.b, 0xb1)
		e.u32(uint32(len(x)))
		e.b = append(e.b, x...)
	case symbol:
		e.b = append(e.b, 0xb3)
		e.u32(uint32(len(x)))
		e.b = append(e.b, x...)
	case binaryVal:
		e.b = append(e.b, 0xb0)
		e.u32(uint32(len(x)))
		e.b = append(e.b, x...)
	case list:
		e.compound(0xd0, len(x), func() {
			for _, it := range x {
				e.value(it)
			}
		})
	case mapVal:
		e.compound(0xd1, 2*len(x), func() {
			for _, p := range x {
				e.value(p.key)
				e.value(p.value)
			}
		})
	case strArray:
		e.compound(0xf0, len(x), func() {
			e.b = append(e.b, 0xb1)
			for _, s := range x {
				e.u32(uint32(len(s)))
				e.b = append(e.b, s...)
			}
		})
	case symArray:
		e.compound(0xf0, len(x), func() {
			e.b = append(e.b, 0xb3)
			for _, s := range x {
				e.u32(uint32(len(s)))
				e.b = append(e.b, s...)
			}
		})
	case described:
		e.b = append(e.b, 0x00, 0x53, byte(x.code))
		e.value(x.value)
	default:
		panic(fmt.Sprintf("amqphub: cannot encode %T", v))
	}
}

// compound writes a 32-bit list, map or array: its size covers the count
// and the items.
func (e *encoder) compound(code byte, count int, items func()) {
	e.b = append(e.b, code, 0, 0, 0, 0)
	at := len(e.b)
	e.u32(uint32(count))
	items()
	binary.BigEndian.PutUint32(e.b[at-4:], uint32(len(e.b)-at))
}
