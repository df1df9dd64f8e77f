package tablestore_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/fusebox/fusebox/internal/tablestore"
	"github.com/fusebox/fusebox/internal/testenv"
)

// Transactions are posted by Fusebox itself (not the SDK's
// SubmitTransaction, which decodes and re-encodes every row): each kind of
// action reaches the rows it names, whatever the keys hold that an
// address must escape, and reads back as written.
func TestTransactionsReachTheRowsTheyName(t *testing.T) {
	tbl := newTable(t)
	ctx := t.Context()
	keys := []string{"it's", "two words", "100%", "a+b=c", "(paren)", "é ü 日本", "''", "a&b;c,d:e@f$g!h*i"}
	b := tbl.NewBatch("p'q %")
	for i, k := range keys {
		if err := b.Upsert(&widget{Meta: tablestore.Meta{PartitionKey: "p'q %", RowKey: k}, Name: k, Count: int64(i)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Submit(ctx); err != nil {
		t.Fatalf("upserts: %v", err)
	}
	read := map[string]*widget{}
	for _, k := range keys {
		var w widget
		if err := tbl.Get(ctx, "p'q %", k, &w); err != nil || w.Name != k {
			t.Fatalf("row %q: read %q (%v), want its own name", k, w.Name, err)
		}
		read[k] = &w
	}

	// A conditional replace and a conditional delete, by the ETags read.
	b = tbl.NewBatch("p'q %")
	read["it's"].Name = "replaced"
	if err := b.Update(read["it's"]); err != nil {
		t.Fatal(err)
	}
	if err := b.Delete("p'q %", "100%", read["100%"].ETag); err != nil {
		t.Fatal(err)
	}
	if err := b.Insert(&widget{Meta: tablestore.Meta{PartitionKey: "p'q %", RowKey: "new 'one'"}, Name: "inserted"}); err != nil {
		t.Fatal(err)
	}
	if err := b.Submit(ctx); err != nil {
		t.Fatalf("update, delete and insert: %v", err)
	}
	var w widget
	if err := tbl.Get(ctx, "p'q %", "it's", &w); err != nil || w.Name != "replaced" {
		t.Errorf("the replaced row reads %q (%v)", w.Name, err)
	}
	if err := tbl.Get(ctx, "p'q %", "100%", &w); !errors.Is(err, tablestore.ErrNotFound) {
		t.Errorf("the deleted row: %v, want not found", err)
	}
	if err := tbl.Get(ctx, "p'q %", "new 'one'", &w); err != nil || w.Name != "inserted" {
		t.Errorf("the inserted row reads %q (%v)", w.Name, err)
	}

	// A delete of a row that is gone fails the whole transaction.
	b = tbl.NewBatch("p'q %")
	if err := b.Delete("p'q %", "100%", tablestore.AnyETag); err != nil {
		t.Fatal(err)
	}
	if err := b.Upsert(&widget{Meta: tablestore.Meta{PartitionKey: "p'q %", RowKey: "never"}}); err != nil {
		t.Fatal(err)
	}
	if err := b.Submit(ctx); !errors.Is(err, tablestore.ErrNotFound) {
		t.Errorf("a delete of a missing row: %v, want not found", err)
	}
	if err := tbl.Get(ctx, "p'q %", "never", &w); !errors.Is(err, tablestore.ErrNotFound) {
		t.Errorf("the failed transaction's upsert took effect (%v)", err)
	}
}

// A transaction signed with another key is refused and writes nothing: the
// signature Fusebox computes is what lets its transactions in.
func TestATransactionSignedWithAnotherKeyIsRefused(t *testing.T) {
	tbl := newTable(t)
	cs := testenv.ConnectionString(t)
	start := strings.Index(cs, "AccountKey=") + len("AccountKey=")
	end := start + strings.Index(cs[start:], ";")
	wrong := cs[:start] + "d3Jvbmcga2V5IHdyb25nIGtleSB3cm9uZyBrZXkgd3Jvbmcga2V5IQ==" + cs[end:]
	svc, err := tablestore.NewFromConnectionString(wrong, tablestore.Options{Prefix: strings.TrimSuffix(tbl.Name(), "Widgets"), MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	b := svc.Table("Widgets").NewBatch("p")
	if err := b.Upsert(&widget{Meta: tablestore.Meta{PartitionKey: "p", RowKey: "forged"}}); err != nil {
		t.Fatal(err)
	}
	err = b.Submit(t.Context())
	var te *tablestore.Error
	if !errors.As(err, &te) || te.Status != 403 {
		t.Fatalf("a transaction with another key: %v, want 403", err)
	}
	var w widget
	if err := tbl.Get(t.Context(), "p", "forged", &w); !errors.Is(err, tablestore.ErrNotFound) {
		t.Errorf("the refused transaction wrote its row (%v)", err)
	}
}

// Rows written larger than a page may hold are read all the same, in
// smaller pages: a page over the size read at once is asked for again in
// fewer rows, never read whole nor given up on.
func TestRowsWrittenLargeAreReadInSmallerPages(t *testing.T) {
	tbl := newTable(t)
	ctx := t.Context()
	b := tbl.NewBatch("big")
	for i := range 40 {
		if err := b.Upsert(&widget{Meta: tablestore.Meta{PartitionKey: "big", RowKey: fmt.Sprintf("r%02d", i)}, Name: strings.Repeat("x", 6000)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Submit(ctx); err != nil {
		t.Fatal(err)
	}
	defer tablestore.SetMaxQueryAnswer(64 << 10)()
	rows, err := tablestore.All[widget](ctx, tbl, tablestore.Query{Filter: tablestore.PartitionIs("big")})
	if err != nil || len(rows) != 40 {
		t.Fatalf("read %d rows (%v), want all 40 of 240 kB in pages of at most 64 kB", len(rows), err)
	}
}
