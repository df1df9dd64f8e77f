package storage_test

import (
	"testing"
	"time"

	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/storage"
	"github.com/fusebox/fusebox/internal/tablestore"
	"github.com/fusebox/fusebox/internal/testenv"
)

// Every kind of report a failure row counts comes back as it was written:
// a row of records stays one (an instance that took it for a direct row
// would count a call twice when its span comes), and records that wait for
// no span say so in a column of their own, which a reader that does not
// know it ignores, waiting as for any records.
func TestEveryViaOfAFailureRowIsReadBackAsWritten(t *testing.T) {
	svc, _ := testenv.Storage(t)
	if err := svc.CreateTable(t.Context(), storage.TableFailures); err != nil {
		t.Fatal(err)
	}
	st := storage.New(svc)
	now := time.Now().UTC().Truncate(time.Second)
	vias := []circuit.Via{circuit.Direct, circuit.Records, circuit.FailedRecords, circuit.RecordsAlone, circuit.FailedRecordsAlone}
	var reports []storage.Report
	for i, v := range vias {
		reports = append(reports, storage.Report{App: "orders", Function: "Process", Second: now.Add(-time.Duration(i) * time.Second), Count: i + 1, Via: v})
	}
	if err := st.Failures.Record(t.Context(), "vias", reports); err != nil {
		t.Fatal(err)
	}
	// Another program's row whose Alone is not a boolean is refused with
	// its reason, and costs no other row.
	odd := struct {
		tablestore.Meta
		App, Function string
		Second        time.Time
		Count         int32
		Via, Alone    string
	}{Meta: tablestore.Meta{PartitionKey: storage.FailurePartition(now), RowKey: "orders|Process|" + now.Format("05") + "|other"},
		App: "orders", Function: "Process", Second: now, Count: 99, Via: "records", Alone: "yes"}
	if err := svc.Table(storage.TableFailures).Upsert(t.Context(), &odd); err != nil {
		t.Fatal(err)
	}
	rows, rejected, err := st.Failures.ReadFailures(t.Context(), now.Add(-time.Minute), now.Add(time.Second), time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rejected) != 1 || len(rows) != len(vias) {
		t.Errorf("a row whose Alone is %q: %d rows read, %d refused (%v); want the %d others read and it refused", odd.Alone, len(rows), len(rejected), rejected, len(vias))
	}
	got := map[int]circuit.Via{}
	for _, r := range rows {
		got[r.Count] = r.Via
	}
	for i, v := range vias {
		if got[i+1] != v {
			t.Errorf("a row written as Via %d reads back as %d", v, got[i+1])
		}
	}
}
