package tablestore

import (
	"testing"
	"time"
)

func TestFilterFormatsEveryValueByType(t *testing.T) {
	tests := []struct {
		name string
		got  Filter
		want string
	}{
		{"quote doubled", Eq("Name", "O'Brien"), "Name eq 'O''Brien'"},
		{"injection stays a literal", Eq("Name", "x' or 'a' eq 'a"), "Name eq 'x'' or ''a'' eq ''a'"},
		{"int64", Gt("Count", int64(5)), "Count gt 5L"},
		{"int32", Le("Small", int32(-3)), "Small le -3"},
		{"bool", Ne("Enabled", false), "Enabled ne false"},
		{"time in UTC", Ge("Seen", time.Date(2026, 1, 2, 4, 5, 6, 0, time.FixedZone("x", 3600))), "Seen ge datetime'2026-01-02T03:05:06Z'"},
		{"and skips empty", And(PartitionIs("p"), "", Eq("RowKey", "r")), "(PartitionKey eq 'p') and (RowKey eq 'r')"},
		{"single term unwrapped", Or("", PartitionIs("p")), "PartitionKey eq 'p'"},
		{"not", Not(PartitionIs("p")), "not (PartitionKey eq 'p')"},
		{"prefix", RowKeyPrefix("ab"), "(RowKey ge 'ab') and (RowKey lt 'ac')"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if string(tt.got) != tt.want {
				t.Errorf("got %s, want %s", tt.got, tt.want)
			}
		})
	}
}

func TestFilterRejectsBadPropertyNames(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("a property name with a space was accepted")
		}
	}()
	Eq("Name or true", "x")
}

func TestMarshalEscapesStrings(t *testing.T) {
	type row struct {
		Meta
		S string
	}
	for _, s := range []string{"plain", `quote " and \ backslash`, "tab\tnewline\n", "ünïcödé ✓", "<html>&"} {
		data, err := marshal(&row{Meta: Meta{PartitionKey: "p", RowKey: "r"}, S: s})
		if err != nil {
			t.Fatal(err)
		}
		var back row
		if err := unmarshal(data, &back, ""); err != nil {
			t.Fatalf("%q: %v in %s", s, err, data)
		}
		if back.S != s {
			t.Errorf("round trip of %q gave %q", s, back.S)
		}
	}
}
