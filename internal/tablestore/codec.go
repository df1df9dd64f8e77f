package tablestore

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Meta holds the system properties every Entity has. Embed it in a row type:
//
//	type appRow struct {
//		tablestore.Meta
//		DisplayName string
//		Threshold   int32
//		OpenedAt    time.Time // stored as Edm.DateTime
//	}
//
// Exported fields map to properties of the same name; a `table:"Name"` tag
// renames one, `table:"-"` skips it and `table:",readonly"` reads it but
// never writes it (a column an older release wrote, kept readable). int64 is stored as Edm.Int64,
// time.Time as Edm.DateTime (zero time: property omitted) and []byte as
// Edm.Binary, so rows stay readable by the .NET and JavaScript SDKs.
type Meta struct {
	PartitionKey string
	RowKey       string
	// ETag is the version the row had when it was read or last written.
	// Update and Delete send it back, so a write based on a stale read fails
	// with ErrConflict instead of overwriting someone else's change.
	ETag ETag `table:"-"`
	// Timestamp is set by the service on every write; it is never sent.
	Timestamp time.Time `table:"-"`
}

// ETag is an Entity version as returned by Table Storage.
type ETag string

// AnyETag makes Delete unconditional. It has to be asked for by name.
const AnyETag ETag = "*"

func (m *Meta) meta() *Meta { return m }

// Entity is a row type: a struct that embeds Meta.
type Entity interface {
	meta() *Meta
	Keys() (partitionKey, rowKey string)
}

// Keys returns the row's PartitionKey and RowKey.
func (m *Meta) Keys() (string, string) { return m.PartitionKey, m.RowKey }

type fieldCodec struct {
	index    []int
	name     string
	readOnly bool
	kind     reflect.Kind
	typ      reflect.Type
}

var (
	codecCache sync.Map // reflect.Type -> []fieldCodec
	timeType   = reflect.TypeFor[time.Time]()
	bytesType  = reflect.TypeFor[[]byte]()
)

func fieldsOf(t reflect.Type) ([]fieldCodec, error) {
	if c, ok := codecCache.Load(t); ok {
		return c.([]fieldCodec), nil
	}
	var fields []fieldCodec
	var walk func(t reflect.Type, prefix []int) error
	walk = func(t reflect.Type, prefix []int) error {
		for i := range t.NumField() {
			f := t.Field(i)
			index := append(append([]int(nil), prefix...), i)
			if f.Anonymous && f.Type.Kind() == reflect.Struct && f.Type != timeType {
				if err := walk(f.Type, index); err != nil {
					return err
				}
				continue
			}
			if !f.IsExported() {
				continue
			}
			name := f.Name
			readOnly := false
			if tag, ok := f.Tag.Lookup("table"); ok {
				if tag == "-" {
					continue
				}
				tag, opt, _ := strings.Cut(tag, ",")
				if tag != "" {
					name = tag
				}
				readOnly = opt == "readonly"
			}
			switch {
			case f.Type == timeType, f.Type == bytesType:
			default:
				switch f.Type.Kind() {
				case reflect.String, reflect.Bool, reflect.Int32, reflect.Int64, reflect.Int, reflect.Float64:
				default:
					return fmt.Errorf("tablestore: field %s.%s has unsupported type %s", t.Name(), f.Name, f.Type)
				}
			}
			fields = append(fields, fieldCodec{index: index, name: name, kind: f.Type.Kind(), typ: f.Type, readOnly: readOnly})
		}
		return nil
	}
	if err := walk(t, nil); err != nil {
		return nil, err
	}
	codecCache.Store(t, fields)
	return fields, nil
}

// ClearsTimes is an Entity whose zero times are written, not left out: a
// merge of it clears the times it holds as zero. Table Storage keeps no
// date before 1601, so a zero time is written as that first instant
// (zeroTime), which every read takes for zero.
type ClearsTimes interface {
	Entity
	ClearsTimes()
}

// zeroTime is how a cleared time is stored: Table Storage's earliest
// date-time.
var zeroTime = time.Date(1601, 1, 1, 0, 0, 0, 0, time.UTC)

// marshal turns a row into the JSON body the service expects, with OData
// type annotations where JSON alone would lose the type. It writes the
// object directly, in field order, rather than through a map: batches of
// thousands of rows spend their time here.
func marshal(e Entity) ([]byte, error) {
	v := reflect.ValueOf(e).Elem()
	fields, err := fieldsOf(v.Type())
	if err != nil {
		return nil, err
	}
	m := e.meta()
	if err := validateKey("PartitionKey", m.PartitionKey); err != nil {
		return nil, err
	}
	if err := validateKey("RowKey", m.RowKey); err != nil {
		return nil, err
	}
	_, clears := e.(ClearsTimes)
	buf := make([]byte, 0, 64+32*len(fields))
	buf = append(buf, '{')
	first := true
	prop := func(name string) {
		if !first {
			buf = append(buf, ',')
		}
		first = false
		buf = appendJSONString(buf, name)
		buf = append(buf, ':')
	}
	typed := func(name, edm string) {
		prop(name + "@odata.type")
		buf = appendJSONString(buf, edm)
	}
	for _, f := range fields {
		if f.readOnly {
			continue
		}
		fv := v.FieldByIndex(f.index)
		switch {
		case f.typ == timeType:
			t := fv.Interface().(time.Time)
			if t.IsZero() && !clears {
				continue
			}
			if t.IsZero() {
				t = zeroTime
			}
			prop(f.name)
			buf = appendJSONString(buf, t.UTC().Format(time.RFC3339Nano))
			typed(f.name, "Edm.DateTime")
		case f.typ == bytesType:
			if fv.IsNil() {
				continue
			}
			prop(f.name)
			buf = appendJSONString(buf, base64.StdEncoding.EncodeToString(fv.Bytes()))
			typed(f.name, "Edm.Binary")
		case f.kind == reflect.Int64, f.kind == reflect.Int:
			prop(f.name)
			buf = append(buf, '"')
			buf = strconv.AppendInt(buf, fv.Int(), 10)
			buf = append(buf, '"')
			typed(f.name, "Edm.Int64")
		case f.kind == reflect.Int32:
			prop(f.name)
			buf = strconv.AppendInt(buf, fv.Int(), 10)
		case f.kind == reflect.Float64:
			x := fv.Float()
			if math.IsNaN(x) || math.IsInf(x, 0) {
				return nil, fmt.Errorf("tablestore: field %s is %v, which Table Storage cannot hold", f.name, x)
			}
			prop(f.name)
			buf = strconv.AppendFloat(buf, x, 'g', -1, 64)
			typed(f.name, "Edm.Double")
		case f.kind == reflect.Bool:
			prop(f.name)
			buf = strconv.AppendBool(buf, fv.Bool())
		default: // string
			prop(f.name)
			buf = appendJSONString(buf, fv.String())
		}
	}
	return append(buf, '}'), nil
}

// appendJSONString appends s as a JSON string.
func appendJSONString(buf []byte, s string) []byte {
	simple := true
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c >= 0x7f {
			simple = false
			break
		}
	}
	if simple {
		buf = append(buf, '"')
		buf = append(buf, s...)
		return append(buf, '"')
	}
	q, _ := json.Marshal(s)
	return append(buf, q...)
}

// unmarshal fills a row from the JSON the service returns. Rows may be
// written by other programs, so every value is checked against the field's
// type and a mismatch is an error naming the property, not a silent zero.
func unmarshal(data []byte, e Entity, etag ETag) error {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return fmt.Errorf("tablestore: decode Entity: %w", err)
	}
	v := reflect.ValueOf(e).Elem()
	fields, err := fieldsOf(v.Type())
	if err != nil {
		return err
	}
	m := e.meta()
	if err := decodeString(raw["PartitionKey"], &m.PartitionKey); err != nil {
		return fmt.Errorf("tablestore: PartitionKey: %w", err)
	}
	if err := decodeString(raw["RowKey"], &m.RowKey); err != nil {
		return fmt.Errorf("tablestore: RowKey: %w", err)
	}
	m.ETag = etag
	if ts, ok := raw["Timestamp"]; ok {
		var s string
		if json.Unmarshal(ts, &s) == nil {
			m.Timestamp, _ = time.Parse(time.RFC3339Nano, s)
		}
	}
	if tag, ok := raw["odata.etag"]; ok && etag == "" {
		var s string
		if json.Unmarshal(tag, &s) == nil {
			m.ETag = ETag(s)
		}
	}
	for _, f := range fields {
		rv, ok := raw[f.name]
		if !ok || string(rv) == "null" {
			continue
		}
		if err := decodeField(rv, v.FieldByIndex(f.index), f); err != nil {
			return fmt.Errorf("tablestore: property %s of %s/%s: %w", f.name, m.PartitionKey, m.RowKey, err)
		}
	}
	return nil
}

func decodeString(rv json.RawMessage, dst *string) error {
	if rv == nil {
		return nil
	}
	return json.Unmarshal(rv, dst)
}

func decodeField(rv json.RawMessage, fv reflect.Value, f fieldCodec) error {
	switch {
	case f.typ == timeType:
		var s string
		if err := json.Unmarshal(rv, &s); err != nil {
			return fmt.Errorf("want a date-time: %w", err)
		}
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return fmt.Errorf("want an RFC 3339 date-time, got %q", s)
		}
		if t.Equal(zeroTime) {
			t = time.Time{} // a time a merge cleared
		}
		fv.Set(reflect.ValueOf(t.UTC()))
	case f.typ == bytesType:
		var s string
		if err := json.Unmarshal(rv, &s); err != nil {
			return fmt.Errorf("want base64 binary: %w", err)
		}
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return fmt.Errorf("want base64 binary: %w", err)
		}
		fv.SetBytes(b)
	case f.kind == reflect.String:
		var s string
		if err := json.Unmarshal(rv, &s); err != nil {
			return fmt.Errorf("want a string: %w", err)
		}
		fv.SetString(s)
	case f.kind == reflect.Bool:
		var b bool
		if err := json.Unmarshal(rv, &b); err != nil {
			return fmt.Errorf("want a boolean: %w", err)
		}
		fv.SetBool(b)
	case f.kind == reflect.Int32, f.kind == reflect.Int64, f.kind == reflect.Int:
		// Edm.Int64 arrives as a string, Edm.Int32 as a number.
		text := strings.Trim(string(rv), `"`)
		n, err := strconv.ParseInt(text, 10, 64)
		if err != nil {
			return fmt.Errorf("want an integer, got %s", rv)
		}
		if fv.OverflowInt(n) {
			return fmt.Errorf("%d does not fit in %s", n, f.typ)
		}
		fv.SetInt(n)
	case f.kind == reflect.Float64:
		text := strings.Trim(string(rv), `"`)
		x, err := strconv.ParseFloat(text, 64)
		if err != nil {
			return fmt.Errorf("want a number, got %s", rv)
		}
		fv.SetFloat(x)
	}
	return nil
}

// validateKey enforces the service's rules for keys, so a bad key fails
// here with a clear message rather than as an opaque 400.
func validateKey(name, key string) error {
	if len(key) > 1024 {
		return fmt.Errorf("tablestore: %s is %d bytes; the limit is 1024", name, len(key))
	}
	for _, r := range key {
		if r == '/' || r == '\\' || r == '#' || r == '?' || r < 0x20 || (r >= 0x7f && r <= 0x9f) {
			return fmt.Errorf("tablestore: %s %q holds %q, which Table Storage does not allow in keys", name, key, r)
		}
	}
	return nil
}
