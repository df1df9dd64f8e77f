package otlp

import (
	"errors"
	"fmt"
	"reflect"
	"sync"

	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
)

// This file decodes a logs export's protobuf bytes at a cost known before
// anything is built (a trace export's are read without building anything:
// lean.go). Decoding multiplies memory: an empty span is 2 bytes
// on the wire and about 290 once decoded, so 4 MiB of them would be two
// million spans and half a gigabyte. The bytes are walked first, with the
// messages' descriptors, without building anything: records past
// MaxRecords are cut from the bytes, and what decoding the rest would
// cost is added up; an export that would cost more than MaxDecoded is
// refused whole (a host's exports cost a few MiB).

// MaxDecoded bounds what decoding one export may cost in memory.
const MaxDecoded = 32 << 20

// maxDepth bounds nesting: attribute values may nest (arrays, key-value
// lists), a host's do not nest deeper than a few levels.
const maxDepth = 24

// ErrTooCostly says an export would cost more than MaxDecoded to decode.
var ErrTooCostly = errors.New("otlp: the export would cost more than 32 MiB of memory to decode")

// ErrUnreadable says the bytes are no export of the signal.
var ErrUnreadable = errors.New("otlp: the bytes are not an export request of this signal")

// The path to a record: request.resource_*s (1) → scope_*s (2) → the
// record (2), the same numbers for spans and log records.
var recordPath = []protowire.Number{1, 2, 2}

// DecodeLogs decodes an ExportLogsServiceRequest, keeping its first
// MaxRecords log records; cut says how many were cut.
func DecodeLogs(b []byte) (req *collogspb.ExportLogsServiceRequest, cut int, err error) {
	req = &collogspb.ExportLogsServiceRequest{}
	cut, err = decode(b, req, func(kept []byte) error { return proto.Unmarshal(kept, req) })
	return req, cut, err
}

// maxGrowth bounds what one wire byte can cost decoded: an empty message
// is two bytes and at most about 300 decoded. A body too short to reach
// MaxDecoded even so (a host's batch of 512 spans, ~100 kB) is not weighed.
const maxGrowth = 160

// decode cuts b's records past MaxRecords, weighs what is kept as an
// export of m's kind, then has read decode it.
func decode(b []byte, m proto.Message, read func(kept []byte) error) (int, error) {
	kept, cut := b, 0
	if len(b)/2 > MaxRecords && countRecords(b, recordPath) > MaxRecords {
		var err error
		if kept, cut, err = cutRecords(b, recordPath, MaxRecords); err != nil {
			return 0, err
		}
	}
	if len(kept)*maxGrowth > MaxDecoded {
		cost := 0
		if err := weigh(kept, m.ProtoReflect().Descriptor(), 0, &cost); err != nil {
			return 0, err
		}
	}
	if err := read(kept); errors.Is(err, ErrTooCostly) {
		return 0, err
	} else if err != nil {
		return 0, ErrUnreadable
	}
	return cut, nil
}

// eachField calls f with each top-level field of b: its number, wire
// type, whole bytes (tag included) and value (after the tag). It stops at
// f's first error, and says ErrUnreadable for bytes that do not read.
func eachField(b []byte, f func(num protowire.Number, typ protowire.Type, field, value []byte) error) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return ErrUnreadable
		}
		m := protowire.ConsumeFieldValue(num, typ, b[n:])
		if m < 0 {
			return ErrUnreadable
		}
		if err := f(num, typ, b[:n+m], b[n:n+m]); err != nil {
			return err
		}
		b = b[n+m:]
	}
	return nil
}

// nested is a length-delimited field's contents.
func nested(value []byte) []byte {
	v, _ := protowire.ConsumeBytes(value)
	return v
}

var errFound = errors.New("found")

// countRecords counts the records along path, building nothing; bytes
// that do not read count as far as they read (the decoder refuses them).
func countRecords(b []byte, path []protowire.Number) int {
	n := 0
	_ = eachField(b, func(num protowire.Number, typ protowire.Type, _, value []byte) error {
		if num == path[0] && typ == protowire.BytesType {
			if len(path) == 1 {
				n++
			} else {
				n += countRecords(nested(value), path[1:])
			}
		}
		return nil
	})
	return n
}

// cutRecords keeps the first max records found along path and drops the
// rest, rewriting the lengths of the messages that held them.
func cutRecords(b []byte, path []protowire.Number, max int) (out []byte, cut int, err error) {
	left := max
	out, err = cutLevel(b, path, &left, &cut)
	return out, cut, err
}

func cutLevel(b []byte, path []protowire.Number, left, cut *int) ([]byte, error) {
	found := eachField(b, func(num protowire.Number, _ protowire.Type, _, _ []byte) error {
		if num == path[0] {
			return errFound
		}
		return nil
	})
	if found == nil {
		return b, nil // nothing on the path here: the bytes stay as they are
	}
	out := make([]byte, 0, len(b))
	err := eachField(b, func(num protowire.Number, typ protowire.Type, field, value []byte) error {
		switch {
		case num != path[0] || typ != protowire.BytesType:
			out = append(out, field...)
		case len(path) == 1 && *left == 0:
			*cut++
		case len(path) == 1:
			*left--
			out = append(out, field...)
		default:
			inner, err := cutLevel(nested(value), path[1:], left, cut)
			if err != nil {
				return err
			}
			out = protowire.AppendBytes(protowire.AppendTag(out, num, typ), inner)
		}
		return nil
	})
	return out, err
}

// weigh adds to cost what decoding b as a message of md would allocate,
// and stops with ErrTooCostly as soon as it passes MaxDecoded.
func weigh(b []byte, md protoreflect.MessageDescriptor, depth int, cost *int) error {
	if depth > maxDepth {
		return ErrUnreadable
	}
	fields := md.Fields()
	return eachField(b, func(num protowire.Number, typ protowire.Type, field, value []byte) error {
		fd := fields.ByNumber(num)
		switch {
		case fd == nil:
			*cost += len(field) // kept as unknown bytes
		case typ != protowire.BytesType:
			if fd.IsList() {
				*cost += 8
			}
		case fd.Kind() == protoreflect.MessageKind || fd.Kind() == protoreflect.GroupKind:
			*cost += structSize(fd.Message()) + 16 // the struct, its pointer in a slice or field
			if fd.ContainingOneof() != nil {
				*cost += 32 // the oneof's wrapper and interface
			}
			if err := weigh(nested(value), fd.Message(), depth+1, cost); err != nil {
				return err
			}
		case fd.IsList() && fd.Kind() != protoreflect.StringKind && fd.Kind() != protoreflect.BytesKind:
			*cost += 8 * len(value) // packed scalars: at most one per byte
		default:
			*cost += len(value) + 24 // a string's or bytes' contents and header
		}
		if *cost > MaxDecoded {
			return ErrTooCostly
		}
		return nil
	})
}

var structSizes sync.Map // protoreflect.FullName -> int

// structSize is the size of the Go struct generated for md.
func structSize(md protoreflect.MessageDescriptor) int {
	if n, ok := structSizes.Load(md.FullName()); ok {
		return n.(int)
	}
	size := 128 // a message type not linked in: a generous guess
	if mt, err := protoregistry.GlobalTypes.FindMessageByName(md.FullName()); err == nil {
		size = int(reflect.TypeOf(mt.Zero().Interface()).Elem().Size())
	}
	structSizes.Store(md.FullName(), size)
	return size
}

// Describe says what an ErrTooCostly or ErrUnreadable means, for the
// exporter's log.
func Describe(err error) string {
	if errors.Is(err, ErrTooCostly) {
		return fmt.Sprintf("The export would cost more than %d MiB of memory to decode (many empty or nested records); a host's exports cost a few.", MaxDecoded>>20)
	}
	return "The body is not an OTLP export request of this signal."
}

// WeighJSON says, before protojson builds anything, whether decoding an
// OTLP/JSON body could cost more than MaxDecoded: every object is a
// message (about 160 bytes decoded, an empty one 2 bytes in the body),
// and the strings are copied.
func WeighJSON(b []byte) error {
	objects, inString, escaped := 0, false, false
	for _, c := range b {
		switch {
		case escaped:
			escaped = false
		case inString && c == '\\':
			escaped = true
		case c == '"':
			inString = !inString
		case !inString && c == '{':
			objects++
		}
	}
	if objects*160+2*len(b) > MaxDecoded {
		return ErrTooCostly
	}
	return nil
}
