package tablestore_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/fusebox/fusebox/internal/tablestore"
	"github.com/fusebox/fusebox/internal/testenv"
)

type widget struct {
	tablestore.Meta
	Name     string
	Count    int64
	Small    int32
	Ratio    float64
	Enabled  bool
	Seen     time.Time
	Blob     []byte
	Renamed  string `table:"other_name"`
	Internal string `table:"-"`
}

type otherWriter struct {
	tablestore.Meta
	Count string // the wrong type for widget.Count
}

func newTable(t *testing.T) *tablestore.Table {
	t.Helper()
	svc, _ := testenv.Storage(t)
	if err := svc.CreateTable(t.Context(), "Widgets"); err != nil {
		t.Fatal(err)
	}
	// Creating a table twice is not an error: start-up does it on every run.
	if err := svc.CreateTable(t.Context(), "Widgets"); err != nil {
		t.Fatalf("second CreateTable: %v", err)
	}
	return svc.Table("Widgets")
}

func TestRoundTripKeepsEveryType(t *testing.T) {
	tbl := newTable(t)
	seen := time.Date(2026, 3, 29, 1, 30, 0, 123456700, time.UTC)
	in := &widget{
		Meta: tablestore.Meta{PartitionKey: "p", RowKey: "r"},
		Name: "O'Brien", Count: 1<<53 + 1, Small: -7, Ratio: 0.25, Enabled: true,
		Seen: seen, Blob: []byte{0, 1, 2, 255}, Renamed: "x", Internal: "not stored",
	}
	if err := tbl.Insert(t.Context(), in); err != nil {
		t.Fatal(err)
	}
	if in.ETag == "" {
		t.Fatal("Insert did not record the ETag")
	}
	var got widget
	if err := tbl.Get(t.Context(), "p", "r", &got); err != nil {
		t.Fatal(err)
	}
	if got.ETag != in.ETag {
		t.Errorf("ETag = %q, want %q", got.ETag, in.ETag)
	}
	if got.Timestamp.IsZero() {
		t.Error("Timestamp not read")
	}
	checks := []struct {
		name      string
		got, want any
	}{
		{"PartitionKey", got.PartitionKey, "p"},
		{"RowKey", got.RowKey, "r"},
		{"Name", got.Name, in.Name},
		{"Count", got.Count, in.Count},
		{"Small", got.Small, in.Small},
		{"Ratio", got.Ratio, in.Ratio},
		{"Enabled", got.Enabled, true},
		{"Seen", got.Seen, seen},
		{"Renamed", got.Renamed, "x"},
		{"Internal", got.Internal, ""},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	if !bytes.Equal(got.Blob, in.Blob) {
		t.Errorf("Blob = %v, want %v", got.Blob, in.Blob)
	}
}

func TestConditionalWrites(t *testing.T) {
	tbl := newTable(t)
	ctx := t.Context()
	row := &widget{Meta: tablestore.Meta{PartitionKey: "p", RowKey: "r"}, Name: "first"}
	if err := tbl.Insert(ctx, row); err != nil {
		t.Fatal(err)
	}
	if err := tbl.Insert(ctx, &widget{Meta: tablestore.Meta{PartitionKey: "p", RowKey: "r"}}); !errors.Is(err, tablestore.ErrExists) {
		t.Errorf("second Insert: got %v, want ErrExists", err)
	}

	var a, b widget
	if err := tbl.Get(ctx, "p", "r", &a); err != nil {
		t.Fatal(err)
	}
	if err := tbl.Get(ctx, "p", "r", &b); err != nil {
		t.Fatal(err)
	}
	a.Name = "a wins"
	if err := tbl.Update(ctx, &a); err != nil {
		t.Fatalf("first update: %v", err)
	}
	b.Name = "b loses"
	if err := tbl.Update(ctx, &b); !errors.Is(err, tablestore.ErrConflict) {
		t.Fatalf("stale update: got %v, want ErrConflict", err)
	}
	var now widget
	if err := tbl.Get(ctx, "p", "r", &now); err != nil {
		t.Fatal(err)
	}
	if now.Name != "a wins" {
		t.Errorf("after the race the row says %q, want %q", now.Name, "a wins")
	}

	if err := tbl.Delete(ctx, "p", "r", b.ETag); !errors.Is(err, tablestore.ErrConflict) {
		t.Errorf("stale delete: got %v, want ErrConflict", err)
	}
	if err := tbl.Delete(ctx, "p", "r", now.ETag); err != nil {
		t.Errorf("delete: %v", err)
	}
	if err := tbl.Get(ctx, "p", "r", &now); !errors.Is(err, tablestore.ErrNotFound) {
		t.Errorf("get after delete: got %v, want ErrNotFound", err)
	}
	if err := tbl.Update(ctx, &a); !errors.Is(err, tablestore.ErrNotFound) && !errors.Is(err, tablestore.ErrConflict) {
		t.Errorf("update of a deleted row: got %v, want ErrNotFound or ErrConflict", err)
	}
	if err := tbl.Update(ctx, &widget{Meta: tablestore.Meta{PartitionKey: "p", RowKey: "x"}}); err == nil {
		t.Error("update without an ETag was accepted")
	}
}

func TestRowsWrittenByOthersAreChecked(t *testing.T) {
	tbl := newTable(t)
	if err := tbl.Insert(t.Context(), &otherWriter{Meta: tablestore.Meta{PartitionKey: "p", RowKey: "r"}, Count: "lots"}); err != nil {
		t.Fatal(err)
	}
	var w widget
	err := tbl.Get(t.Context(), "p", "r", &w)
	if err == nil {
		t.Fatal("a string in an integer property was accepted")
	}
	if want := "property Count of p/r"; !bytes.Contains([]byte(err.Error()), []byte(want)) {
		t.Errorf("error %q does not name %q", err, want)
	}

	// A query skips the bad row, reports it, and goes on.
	for _, rk := range []string{"a", "z"} {
		if err := tbl.Insert(t.Context(), &widget{Meta: tablestore.Meta{PartitionKey: "p", RowKey: rk}, Count: 7}); err != nil {
			t.Fatal(err)
		}
	}
	var good []string
	var bad []*tablestore.RowError
	for row, err := range tablestore.Rows[widget](t.Context(), tbl, tablestore.Query{}) {
		var rowErr *tablestore.RowError
		switch {
		case errors.As(err, &rowErr):
			bad = append(bad, rowErr)
		case err != nil:
			t.Fatal(err)
		default:
			good = append(good, row.RowKey)
		}
	}
	if len(good) != 2 || len(bad) != 1 || bad[0].RowKey != "r" {
		t.Errorf("Rows gave good %v and bad %v, want a and z good and r bad", good, bad)
	}
	if _, err := tablestore.All[widget](t.Context(), tbl, tablestore.Query{}); err == nil {
		t.Error("All accepted a table with a bad row")
	}
}

func TestQueryFollowsContinuations(t *testing.T) {
	tbl := newTable(t)
	ctx := t.Context()
	const n = 1234
	for start := 0; start < n; start += tablestore.MaxBatchActions {
		b := tbl.NewBatch("many")
		for i := start; i < min(start+tablestore.MaxBatchActions, n); i++ {
			if err := b.Insert(&widget{Meta: tablestore.Meta{PartitionKey: "many", RowKey: fmt.Sprintf("%05d", i)}, Count: int64(i)}); err != nil {
				t.Fatal(err)
			}
		}
		if err := b.Submit(ctx); err != nil {
			t.Fatal(err)
		}
	}

	rows, err := tablestore.All[widget](ctx, tbl, tablestore.Query{Filter: tablestore.PartitionIs("many"), Top: 100})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != n {
		t.Fatalf("read %d rows, want %d", len(rows), n)
	}
	for i, r := range rows {
		if r.Count != int64(i) || r.ETag == "" {
			t.Fatalf("row %d: Count %d ETag %q", i, r.Count, r.ETag)
		}
	}

	var pages, total int
	var from tablestore.Continuation
	for {
		page, next, err := tablestore.Page[widget](ctx, tbl, tablestore.Query{Filter: tablestore.Ge("Count", int64(1000)), Top: 100}, from)
		if err != nil {
			t.Fatal(err)
		}
		total += len(page)
		if len(page) > 0 {
			pages++
		}
		if next.IsZero() {
			break
		}
		from = next
	}
	if total != n-1000 || pages != 3 {
		t.Errorf("paged %d rows in %d pages, want %d rows in 3", total, pages, n-1000)
	}
}

func TestFilterValuesCannotChangeTheQuery(t *testing.T) {
	tbl := newTable(t)
	ctx := t.Context()
	names := []string{"O'Brien", "x' or Name ne 'y", "plain", "' or true or '"}
	for i, name := range names {
		if err := tbl.Insert(ctx, &widget{Meta: tablestore.Meta{PartitionKey: "p", RowKey: fmt.Sprint(i)}, Name: name}); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range names {
		rows, err := tablestore.All[widget](ctx, tbl, tablestore.Query{Filter: tablestore.And(tablestore.PartitionIs("p"), tablestore.Eq("Name", name))})
		if err != nil {
			t.Fatalf("query for %q: %v", name, err)
		}
		if len(rows) != 1 || rows[0].Name != name {
			t.Errorf("query for %q matched %d rows, want exactly that one", name, len(rows))
		}
	}
	rows, err := tablestore.All[widget](ctx, tbl, tablestore.Query{Filter: tablestore.Eq("Name", "nobody' or 'a' eq 'a")})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 0 {
		t.Errorf("an injected condition matched %d rows", len(rows))
	}
}

func TestBatchEnforcesAzureRules(t *testing.T) {
	tbl := newTable(t)
	b := tbl.NewBatch("p")
	if err := b.Insert(&widget{Meta: tablestore.Meta{PartitionKey: "other", RowKey: "r"}}); !errors.Is(err, tablestore.ErrBatch) {
		t.Errorf("row of another partition: got %v, want ErrBatch", err)
	}
	for i := range tablestore.MaxBatchActions {
		if err := b.Insert(&widget{Meta: tablestore.Meta{PartitionKey: "p", RowKey: fmt.Sprint(i)}}); err != nil {
			t.Fatalf("action %d: %v", i+1, err)
		}
	}
	if err := b.Insert(&widget{Meta: tablestore.Meta{PartitionKey: "p", RowKey: "101"}}); !errors.Is(err, tablestore.ErrBatch) {
		t.Errorf("action 101: got %v, want ErrBatch", err)
	}
	big := tbl.NewBatch("p")
	blob := make([]byte, 48<<10)
	var err error
	for i := 0; err == nil && i < tablestore.MaxBatchActions; i++ {
		err = big.Insert(&widget{Meta: tablestore.Meta{PartitionKey: "p", RowKey: fmt.Sprint(i)}, Blob: blob})
	}
	if !errors.Is(err, tablestore.ErrBatch) {
		t.Errorf("over 4 MiB: got %v, want ErrBatch", err)
	}
	dup := tbl.NewBatch("p")
	_ = dup.Insert(&widget{Meta: tablestore.Meta{PartitionKey: "p", RowKey: "same"}})
	if err := dup.Upsert(&widget{Meta: tablestore.Meta{PartitionKey: "p", RowKey: "same"}}); !errors.Is(err, tablestore.ErrBatch) {
		t.Errorf("same row twice: got %v, want ErrBatch", err)
	}
}

func TestFailedBatchReportsRealStatusAndWritesNothing(t *testing.T) {
	tbl := newTable(t)
	ctx := t.Context()
	existing := &widget{Meta: tablestore.Meta{PartitionKey: "p", RowKey: "taken"}, Name: "v1"}
	if err := tbl.Insert(ctx, existing); err != nil {
		t.Fatal(err)
	}
	stale := *existing
	existing.Name = "v2"
	if err := tbl.Update(ctx, existing); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name string
		add  func(b *tablestore.Batch) error
		want error
	}{
		{"insert of an existing row", func(b *tablestore.Batch) error {
			return b.Insert(&widget{Meta: tablestore.Meta{PartitionKey: "p", RowKey: "taken"}})
		}, tablestore.ErrExists},
		{"update with a stale ETag", func(b *tablestore.Batch) error { return b.Update(&stale) }, tablestore.ErrConflict},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := tbl.NewBatch("p")
			if err := b.Insert(&widget{Meta: tablestore.Meta{PartitionKey: "p", RowKey: "fresh"}}); err != nil {
				t.Fatal(err)
			}
			if err := tt.add(b); err != nil {
				t.Fatal(err)
			}
			err := b.Submit(ctx)
			if !errors.Is(err, tt.want) {
				t.Fatalf("Submit: got %v, want %v", err, tt.want)
			}
			var fresh widget
			if err := tbl.Get(ctx, "p", "fresh", &fresh); !errors.Is(err, tablestore.ErrNotFound) {
				t.Errorf("the batch's other insert took effect (get: %v)", err)
			}
		})
	}
}

func TestBadKeysAreRefusedBeforeSending(t *testing.T) {
	tbl := newTable(t)
	for _, key := range []string{"a/b", "a#b", "a?b", "a\\b", "tab\there"} {
		if err := tbl.Insert(context.Background(), &widget{Meta: tablestore.Meta{PartitionKey: "p", RowKey: key}}); err == nil || errors.Is(err, tablestore.ErrInvalid) {
			t.Errorf("key %q: got %v, want a client-side error", key, err)
		}
	}
}
