package tablestore_test

import (
	"errors"
	"testing"
	"time"

	"github.com/fusebox/fusebox/internal/tablestore"
)

// seenAndCount is what a merge of a widget sets: its count and when it was
// seen, a zero time clearing it.
type seenAndCount struct {
	tablestore.Meta
	Count int64
	Seen  time.Time
}

func (*seenAndCount) ClearsTimes() {}

// A merge, alone or in a batch, changes the properties it holds (a zero
// time clears one) and leaves the row's others; it is refused when the row
// changed since the ETag it carries, and a refused batch writes nothing.
func TestAMergeSetsWhatItHoldsAndClearsZeroTimes(t *testing.T) {
	tbl := newTable(t)
	seen := time.Date(2026, 12, 6, 9, 0, 0, 0, time.UTC)
	w := &widget{Meta: tablestore.Meta{PartitionKey: "p", RowKey: "merged"}, Name: "kept", Count: 1, Seen: seen}
	if err := tbl.Insert(t.Context(), w); err != nil {
		t.Fatal(err)
	}
	var got widget
	if err := tbl.Get(t.Context(), "p", "merged", &got); err != nil {
		t.Fatal(err)
	}
	m := &seenAndCount{Meta: tablestore.Meta{PartitionKey: "p", RowKey: "merged", ETag: got.ETag}, Count: 2}
	b := tbl.NewBatch("p")
	if err := b.Merge(m); err != nil {
		t.Fatal(err)
	}
	if err := b.Submit(t.Context()); err != nil {
		t.Fatal(err)
	}
	var after widget
	if err := tbl.Get(t.Context(), "p", "merged", &after); err != nil {
		t.Fatal(err)
	}
	if after.Name != "kept" || after.Count != 2 || !after.Seen.IsZero() {
		t.Errorf("after the merge: name %q, count %d, seen %s; want kept, 2 and cleared", after.Name, after.Count, after.Seen)
	}
	m.Count, m.Seen = 3, seen // at the old ETag
	stale := tbl.NewBatch("p")
	if err := stale.Merge(m); err != nil {
		t.Fatal(err)
	}
	if err := stale.Submit(t.Context()); !errors.Is(err, tablestore.ErrConflict) {
		t.Errorf("a merge at an old ETag: %v, want ErrConflict", err)
	}
	m.ETag = after.ETag
	if err := tbl.Merge(t.Context(), m); err != nil {
		t.Fatal(err)
	}
	if err := tbl.Get(t.Context(), "p", "merged", &after); err != nil {
		t.Fatal(err)
	}
	if after.Count != 3 || !after.Seen.Equal(seen) || after.Name != "kept" {
		t.Errorf("after a merge alone: count %d, seen %s, name %q", after.Count, after.Seen, after.Name)
	}
}
