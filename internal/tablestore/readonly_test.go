package tablestore_test

import (
	"testing"

	"github.com/fusebox/fusebox/internal/tablestore"
)

// widgetNow is a widget as a newer release keeps it: its Name is still
// read where an older release wrote it, but never written again.
type widgetNow struct {
	tablestore.Meta
	Name  string `table:",readonly"`
	Label string
}

// A read-only column is read, and a replace by a row type that holds it
// read-only drops it; a merge leaves it as it was.
func TestAReadOnlyColumnIsReadButNeverWritten(t *testing.T) {
	tbl := newTable(t)
	if err := tbl.Insert(t.Context(), &widget{Meta: tablestore.Meta{PartitionKey: "p", RowKey: "old"}, Name: "from before"}); err != nil {
		t.Fatal(err)
	}
	var now widgetNow
	if err := tbl.Get(t.Context(), "p", "old", &now); err != nil {
		t.Fatal(err)
	}
	if now.Name != "from before" {
		t.Fatalf("read-only Name read as %q, want the older release's", now.Name)
	}
	now.Label = "merged"
	if err := tbl.Merge(t.Context(), &now); err != nil {
		t.Fatal(err)
	}
	var merged widget
	if err := tbl.Get(t.Context(), "p", "old", &merged); err != nil {
		t.Fatal(err)
	}
	if merged.Name != "from before" {
		t.Errorf("after a merge, Name is %q, want it left", merged.Name)
	}
	now.Name, now.ETag = "changed here", merged.ETag
	if err := tbl.Update(t.Context(), &now); err != nil {
		t.Fatal(err)
	}
	var replaced widget
	if err := tbl.Get(t.Context(), "p", "old", &replaced); err != nil {
		t.Fatal(err)
	}
	if replaced.Name != "" {
		t.Errorf("after a replace, Name is %q, want it gone (read-only fields are never written)", replaced.Name)
	}
}
