package storage_test

import (
	"testing"
	"time"

	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/storage"
	"github.com/fusebox/fusebox/internal/tablestore"
	"github.com/fusebox/fusebox/internal/testenv"
)

type rawProbeRow struct {
	tablestore.Meta
	Episode int64
	Answers string
	InARow  int32
}

// A circuit's probe record reads back as written; a row that does not
// read (answers that are no JSON, more good in a row than answers) is
// skipped and listed, and its circuit's probe starts over.
func TestAProbeRecordReadsBackAndABadOneStartsOver(t *testing.T) {
	svc, _ := testenv.Storage(t)
	ctx := t.Context()
	if err := svc.CreateTable(ctx, storage.TableProbes); err != nil {
		t.Fatal(err)
	}
	st := storage.New(svc)
	at := time.Date(2026, 12, 7, 6, 0, 0, 0, time.UTC)
	rec := circuit.ProbeRecord{Episode: 3, Resolved: true, Reason: "alert rule db-dtu resolved", InARow: 1,
		Answers: []circuit.ProbeAnswer{{At: at, Good: false, Said: "503", Took: 12 * time.Millisecond}, {At: at.Add(time.Second), Good: true, Said: "200", Took: 8 * time.Millisecond}}}
	if err := st.Probes.Put(ctx, "orders", "Process", rec); err != nil {
		t.Fatal(err)
	}
	table := svc.Table(storage.TableProbes)
	for fn, row := range map[string]rawProbeRow{"Wordy": {Episode: 1, Answers: "not json"}, "Boastful": {Episode: 1, Answers: "[]", InARow: 5}} {
		row.Meta = tablestore.Meta{PartitionKey: "orders", RowKey: fn}
		if err := table.Upsert(ctx, &row); err != nil {
			t.Fatal(err)
		}
	}
	all, err := st.Probes.All(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := all["orders/Process"]
	if len(all) != 1 || got.Episode != 3 || !got.Resolved || got.InARow != 1 || len(got.Answers) != 2 || got.Answers[0].Said != "503" || got.Answers[1].Took != 8*time.Millisecond {
		t.Fatalf("read %+v; want the one good record as written", all)
	}
	bad := 0
	for _, f := range st.Faults.List() {
		if f.Table == storage.TableProbes {
			bad++
		}
	}
	if bad != 2 {
		t.Errorf("%d probe rows listed as unreadable; want 2: %v", bad, st.Faults.List())
	}
	if r, err := st.Probes.Get(ctx, "orders", "Wordy"); err != nil || r.Episode != 0 {
		t.Errorf("a bad row read alone: %+v %v; want none (the probe starts over)", r, err)
	}
}
