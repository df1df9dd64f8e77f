package tablestore

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Filter is an OData filter expression built only through the functions
// below. Property names are checked and every value is formatted and escaped
// by type, so no value can change the shape of a query: a name such as
// "O'Brien' or true" stays one string literal.
type Filter string

var propertyName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,254}$`)

func compare(property, op string, value any) Filter {
	if !propertyName.MatchString(property) {
		// Property names come from code, never from input: a bad one is a bug.
		panic(fmt.Sprintf("tablestore: invalid property name %q in filter", property))
	}
	return Filter(property + " " + op + " " + literal(value))
}

// literal formats a value as an OData literal of its type.
func literal(v any) string {
	switch x := v.(type) {
	case string:
		return "'" + strings.ReplaceAll(x, "'", "''") + "'"
	case bool:
		return strconv.FormatBool(x)
	case int:
		return strconv.FormatInt(int64(x), 10) + "L"
	case int32:
		return strconv.FormatInt(int64(x), 10)
	case int64:
		return strconv.FormatInt(x, 10) + "L"
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	case time.Time:
		return "datetime'" + x.UTC().Format(time.RFC3339Nano) + "'"
	default:
		panic(fmt.Sprintf("tablestore: unsupported filter value type %T", v))
	}
}

// Eq and the other comparisons compare a property with a typed value.
func Eq(property string, value any) Filter { return compare(property, "eq", value) }
func Ne(property string, value any) Filter { return compare(property, "ne", value) }
func Gt(property string, value any) Filter { return compare(property, "gt", value) }
func Ge(property string, value any) Filter { return compare(property, "ge", value) }
func Lt(property string, value any) Filter { return compare(property, "lt", value) }
func Le(property string, value any) Filter { return compare(property, "le", value) }

// PartitionIs selects one partition.
func PartitionIs(pk string) Filter { return Eq("PartitionKey", pk) }

// RowKeyPrefix selects row keys that start with prefix: RowKey ge prefix
// and RowKey lt the next string after every string with that prefix.
func RowKeyPrefix(prefix string) Filter {
	if prefix == "" {
		return ""
	}
	return And(Ge("RowKey", prefix), Lt("RowKey", prefixEnd(prefix)))
}

func prefixEnd(prefix string) string {
	r := []rune(prefix)
	r[len(r)-1]++
	return string(r)
}

// And joins filters; empty ones are skipped.
func And(fs ...Filter) Filter { return join("and", fs) }

// Or joins filters; empty ones are skipped.
func Or(fs ...Filter) Filter { return join("or", fs) }

// Not negates a filter.
func Not(f Filter) Filter {
	if f == "" {
		return ""
	}
	return "not (" + f + ")"
}

func join(op string, fs []Filter) Filter {
	var parts []string
	for _, f := range fs {
		if f != "" {
			parts = append(parts, "("+string(f)+")")
		}
	}
	switch len(parts) {
	case 0:
		return ""
	case 1:
		return Filter(strings.TrimSuffix(strings.TrimPrefix(parts[0], "("), ")"))
	}
	return Filter(strings.Join(parts, " "+op+" "))
}
