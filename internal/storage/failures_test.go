package storage_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/errortexts"
	"github.com/fusebox/fusebox/internal/storage"
	"github.com/fusebox/fusebox/internal/tablestore"
	"github.com/fusebox/fusebox/internal/testenv"
)

// A writer whose clock runs 60 s ahead writes a row for a second still to
// come. Under a stream of other writes, the incremental reads that follow
// ask only for rows changed since the newest seen, and no longer return
// it; it must still be returned once its second enters the window.
func TestARowAheadOfTheClockIsKeptUntilItsSecondComes(t *testing.T) {
	svc, _ := testenv.Storage(t)
	if err := svc.CreateTable(t.Context(), storage.TableFailures); err != nil {
		t.Fatal(err)
	}
	st := storage.New(svc)
	storage.SetIncrementalMargin(st.Failures, 50*time.Millisecond)
	now := time.Now().UTC().Truncate(time.Second)
	ahead := now.Add(60 * time.Second)
	if _, _, err := st.Failures.Window(t.Context(), now.Add(-30*time.Second), now); err != nil {
		t.Fatal(err) // the first, full read
	}
	if err := st.Failures.Record(t.Context(), "skewed", []storage.Report{{App: "orders", Function: "Process", Second: ahead, Count: 7}}); err != nil {
		t.Fatal(err)
	}
	// Background load from another writer, read incrementally, for well
	// past the margin: the skewed row's Timestamp falls behind.
	deadline := time.Now().Add(time.Second)
	for i := 0; time.Now().Before(deadline); i++ {
		if err := st.Failures.Record(t.Context(), "busy", []storage.Report{{App: "orders", Function: "Other", Second: now, Count: i + 1}}); err != nil {
			t.Fatal(err)
		}
		rows, _, err := st.Failures.Window(t.Context(), now.Add(-30*time.Second), now)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			if r.Second.Equal(ahead) {
				t.Fatal("a row for a second still to come was returned early")
			}
		}
	}
	rows, _, err := st.Failures.Window(t.Context(), ahead.Add(-30*time.Second), ahead)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, r := range rows {
		found = found || (r.Second.Equal(ahead) && r.Count == 7)
	}
	if !found {
		t.Errorf("the skewed writer's 7 failures were lost: %d rows returned when their second came", len(rows))
	}
}

// Fusebox spreads a minute over FailureShards partitions, one per writer's
// shard; rows in the first layout (the bare minute), as older writers in
// other languages make them, are read beside them, keys of neither layout
// are refused with the reason, and pruning takes whole minutes of both.
func TestBothPartitionLayoutsAreReadAndPruned(t *testing.T) {
	svc, _ := testenv.Storage(t)
	if err := svc.CreateTable(t.Context(), storage.TableFailures); err != nil {
		t.Fatal(err)
	}
	st := storage.New(svc)
	minute := time.Now().UTC().Truncate(time.Minute)
	last := minute.Add(59 * time.Second) // the minute's last second, where a range ends
	partitions := map[string]bool{}
	for w := range 40 {
		writer := "instance-" + strconv.Itoa(w)
		partitions[storage.FailureShardPartition(last, writer)] = true
		if err := st.Failures.Record(t.Context(), writer, []storage.Report{{App: "orders", Function: "Process", Second: last, Count: 1}}); err != nil {
			t.Fatal(err)
		}
	}
	if len(partitions) < storage.FailureShards/2 {
		t.Errorf("40 writers used %d of %d partitions", len(partitions), storage.FailureShards)
	}
	type row struct {
		tablestore.Meta
		App, Function string
		Second        time.Time
		Count         int32
	}
	rk := func(w string) string { return storage.FailureRowKey("orders", "Process", last, w) }
	for _, r := range []*row{
		{Meta: tablestore.Meta{PartitionKey: storage.FailurePartition(last), RowKey: rk("csharp")}, Count: 5},
		{Meta: tablestore.Meta{PartitionKey: storage.FailurePartition(last) + "-16", RowKey: rk("bad-shard")}, Count: 100},
		{Meta: tablestore.Meta{PartitionKey: storage.FailurePartition(last) + "-x", RowKey: rk("bad-suffix")}, Count: 100},
	} {
		r.App, r.Function, r.Second = "orders", "Process", last
		if err := svc.Table(storage.TableFailures).Insert(t.Context(), r); err != nil {
			t.Fatal(err)
		}
	}
	rows, rejected, err := st.Failures.ReadFailures(t.Context(), minute, last, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	sum := 0
	for _, r := range rows {
		sum += r.Count
	}
	if sum != 45 || len(rows) != 41 {
		t.Errorf("read %d rows counting %d, want 41 rows counting 45 (40 writers and the first layout's row)", len(rows), sum)
	}
	if len(rejected) != 2 || !strings.Contains(rejected[0].Reason, "PartitionKey must be the UTC minute") {
		t.Errorf("rejected %+v, want the two rows of neither layout", rejected)
	}
	// Window says the same of the same rows to every caller, every time:
	// a page's read does not use up the evaluator's report of a bad row.
	page := st.Failures.Reader()
	for i, reader := range []*storage.Failures{page, st.Failures, page, st.Failures} {
		if _, bad, err := reader.Window(t.Context(), minute, last); err != nil || len(bad) != 2 {
			t.Errorf("Window call %d named %d unreadable rows (err %v), want the same 2 each time", i+1, len(bad), err)
		}
	}
	if n, err := st.Failures.DeleteBefore(t.Context(), minute); err != nil || n != 0 {
		t.Errorf("pruning before the minute removed %d (%v), want 0", n, err)
	}
	if n, err := st.Failures.DeleteBefore(t.Context(), minute.Add(time.Minute)); err != nil || n != 43 {
		t.Errorf("pruning the whole minute removed %d (%v), want all 43", n, err)
	}
}

// After a burst of writes and a quiet second, an incremental read asks
// only for what changed since the service last answered, and reads
// nothing: it does not fetch the burst again on every tick because the
// newest row it has seen is part of it.
func TestAQuietSecondAfterABurstReadsNothing(t *testing.T) {
	var rowsRead atomic.Int64
	svc, err := tablestore.NewFromConnectionString(testenv.ConnectionString(t), tablestore.Options{Prefix: testenv.Prefix(t),
		ObserveRows: func(_ string, n int) { rowsRead.Add(int64(n)) }})
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.CreateTable(t.Context(), storage.TableFailures); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.DeleteTable(context.Background(), storage.TableFailures) })
	st := storage.New(svc)
	storage.SetIncrementalMargin(st.Failures, 50*time.Millisecond)
	now := time.Now().UTC().Truncate(time.Second)
	var burst []storage.Report
	for i := range 200 {
		burst = append(burst, storage.Report{App: "orders", Function: "F" + strconv.Itoa(i), Second: now, Count: 1})
	}
	if err := st.Failures.Record(t.Context(), "burst", burst); err != nil {
		t.Fatal(err)
	}
	from := now.Add(-30 * time.Second)
	if rows, _, err := st.Failures.Window(t.Context(), from, now); err != nil || len(rows) != 200 {
		t.Fatalf("full read: %d rows, %v", len(rows), err)
	}
	// The service's clock has whole seconds: once it has moved on from the
	// burst's second, a read answered then covers the burst. Read as the
	// evaluator would, tick after tick.
	testenv.Eventually(t, 5*time.Second, func() (bool, string) {
		before := rowsRead.Load()
		rows, _, err := st.Failures.Window(t.Context(), from, now)
		if err != nil || len(rows) != 200 {
			t.Fatalf("incremental read: %d rows kept, %v", len(rows), err)
		}
		last := rowsRead.Load() - before
		return last == 0, fmt.Sprintf("after the burst each incremental read still fetches %d rows", last)
	})
}

// What a page groups is bounded before it is read: a window of 2,500
// stored seconds is grouped from its first 2,000, and says so.
func TestGroupingReadsAtMostMaxRows(t *testing.T) {
	svc, _ := testenv.Storage(t)
	if err := svc.CreateTable(t.Context(), storage.TableFailures); err != nil {
		t.Fatal(err)
	}
	st := storage.New(svc)
	now := time.Now().UTC().Truncate(time.Second)
	for w := range 25 {
		var rs []storage.Report
		for s := range 100 {
			rs = append(rs, storage.Report{App: "orders", Function: "Process", Second: now.Add(-time.Duration(s+1) * time.Second), Count: 1, Sample: "Timeout after " + strconv.Itoa(s) + " s"})
		}
		if err := st.Failures.Record(t.Context(), "w"+strconv.Itoa(w), rs); err != nil {
			t.Fatal(err)
		}
	}
	ci := circuit.Circuit{AppID: "orders", Function: "Process", Settings: circuit.Settings{Window: 5 * time.Minute}, State: circuit.Closed}
	groups, other, span, err := errortexts.OfCircuit(t.Context(), st.Failures.Reader(), ci, now, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(groups) != 1 || groups[0].Count != errortexts.MaxRows || other != 0 || !strings.Contains(span, "first 2000 stored seconds") {
		t.Errorf("groups %+v, other %d, span %q; want one group of the first %d rows, said so", groups, other, span, errortexts.MaxRows)
	}
	ci.Window = 30 * time.Second // 750 rows: all read, nothing said
	groups, _, span, err = errortexts.OfCircuit(t.Context(), st.Failures.Reader(), ci, now, 10)
	if err != nil || len(groups) != 1 || groups[0].Count != 750 || strings.Contains(span, "stored seconds") {
		t.Errorf("a 30 s window: %+v, %q, %v; want its 750 failures, all read", groups, span, err)
	}
}

// A page takes the evaluator's rows while they are fresh and cover what it
// asks, with no read of its own; not once this instance has recorded
// failures since, nor for an earlier span, nor when stale: then it reads.
func TestAPageTakesTheEvaluatorsFreshRows(t *testing.T) {
	svc, _ := testenv.Storage(t)
	if err := svc.CreateTable(t.Context(), storage.TableFailures); err != nil {
		t.Fatal(err)
	}
	st := storage.New(svc)
	now := time.Now().UTC().Truncate(time.Second)
	rec := func(n int) {
		t.Helper()
		if err := st.Failures.Record(t.Context(), "vm-1", []storage.Report{{App: "orders", Function: "Process", Second: now.Add(-time.Duration(n) * time.Second), Count: 1}}); err != nil {
			t.Fatal(err)
		}
	}
	rec(1)
	if _, _, err := st.Failures.Window(t.Context(), now.Add(-time.Minute), now); err != nil {
		t.Fatal(err)
	}
	if rows, ok := st.Failures.Cached(now.Add(-30*time.Second), now, time.Minute); !ok || len(rows) != 1 {
		t.Fatalf("fresh evaluator rows: %d, %v; want the one row", len(rows), ok)
	}
	if _, ok := st.Failures.Cached(now.Add(-2*time.Minute), now, time.Minute); ok {
		t.Error("the evaluator's rows were taken for a span before the one it read")
	}
	rec(2)
	if _, ok := st.Failures.Cached(now.Add(-30*time.Second), now, time.Minute); ok {
		t.Error("the evaluator's rows were taken though this instance recorded failures since it read them")
	}
	page := storage.PageRows{Evaluator: st.Failures, Own: st.Failures.Reader()}
	rows, _, err := page.Window(t.Context(), now.Add(-30*time.Second), now)
	if err != nil || len(rows) != 2 {
		t.Fatalf("the page read %d rows (%v); want both, read by its own reader", len(rows), err)
	}
	if _, ok := st.Failures.Cached(now.Add(-30*time.Second), now, 0); ok {
		t.Error("rows older than allowed were taken")
	}
}

// A row's throttling failures are someone else's number: read, they are
// never more than the row's failures, nor fewer than none.
func TestThrottlingFailuresAreBoundedByTheRowsFailures(t *testing.T) {
	svc, _ := testenv.Storage(t)
	if err := svc.CreateTable(t.Context(), storage.TableFailures); err != nil {
		t.Fatal(err)
	}
	st := storage.New(svc)
	second := time.Now().UTC().Truncate(time.Second)
	if err := st.Failures.Record(t.Context(), "ingest", []storage.Report{{App: "orders", Function: "Process", Second: second, Count: 7, Throttling: 4}}); err != nil {
		t.Fatal(err)
	}
	type row struct {
		tablestore.Meta
		App, Function string
		Second        time.Time
		Count         int32
		Throttling    int32
	}
	for w, n := range map[string]int32{"liar": 500, "negative": -3} {
		r := &row{Meta: tablestore.Meta{PartitionKey: storage.FailurePartition(second), RowKey: storage.FailureRowKey("orders", "Process", second, w)},
			App: "orders", Function: "Process", Second: second, Count: 5, Throttling: n}
		if err := svc.Table(storage.TableFailures).Insert(t.Context(), r); err != nil {
			t.Fatal(err)
		}
	}
	rows, _, err := st.Failures.ReadFailures(t.Context(), second, second, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for _, r := range rows {
		got[r.Source] = r.Throttling
	}
	if got["ingest"] != 4 || got["liar"] != 5 || got["negative"] != 0 {
		t.Errorf("throttling failures read %v; want ingest 4, liar 5 (its Count), negative 0", got)
	}
}

// A window's rows are read with only the columns they count by
// (windowColumns: the error sample stays in the store, docs/benchmarks.md
// measures what that saves); this holds the list to every column the
// window uses (counts, throttling, trace, instance, when the row changed)
// and the circuit's own samples to their text.
func TestAWindowReadKeepsWhatItCountsBy(t *testing.T) {
	svc, _ := testenv.Storage(t)
	if err := svc.CreateTable(t.Context(), storage.TableFailures); err != nil {
		t.Fatal(err)
	}
	st := storage.New(svc)
	now := time.Now().UTC().Truncate(time.Second)
	tp := "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	if err := st.Failures.Record(t.Context(), "w", []storage.Report{{App: "orders", Function: "Process", Second: now.Add(-time.Second), Count: 3, Successes: 2, Throttling: 1,
		Sample: strings.Repeat("x", 900), TraceParent: tp, Instance: "vm-7"}}); err != nil {
		t.Fatal(err)
	}
	rows, rejected, err := st.Failures.Window(t.Context(), now.Add(-time.Minute), now)
	if err != nil || len(rejected) > 0 || len(rows) != 1 {
		t.Fatalf("window: %v rows, rejected %v, err %v", rows, rejected, err)
	}
	r := rows[0]
	if r.Count != 3 || r.Successes != 2 || r.Throttling != 1 || r.TraceParent != tp || r.Source != "vm-7" || !r.Named || r.Modified.IsZero() || r.Sample != "" {
		t.Errorf("window row %+v; want its counts, trace, instance and change time, without the sample", r)
	}
	samples, _, err := st.Failures.CircuitSamples(t.Context(), "orders", "Process", now.Add(-time.Minute), now, 10)
	if err != nil || len(samples) != 1 || len(samples[0].Sample) != 900 {
		t.Errorf("the circuit's samples lost the text: %d rows, err %v", len(samples), err)
	}
}

// Window and Cached hand every caller the same sorted rows, without a copy
// each: a span's rows are those of its seconds, both ends included, in
// order; a row that changes shows at the next read; and what one caller
// appends to its rows never reaches another's.
func TestTheWindowsRowsAreSharedNotCopied(t *testing.T) {
	svc, _ := testenv.Storage(t)
	if err := svc.CreateTable(t.Context(), storage.TableFailures); err != nil {
		t.Fatal(err)
	}
	st := storage.New(svc)
	now := time.Now().UTC().Truncate(time.Second)
	rec := func(ago, count int) {
		t.Helper()
		if err := st.Failures.Record(t.Context(), "vm-1", []storage.Report{{App: "orders", Function: "Process", Second: now.Add(-time.Duration(ago) * time.Second), Count: count}}); err != nil {
			t.Fatal(err)
		}
	}
	for _, ago := range []int{9, 5, 4, 3, 1} {
		rec(ago, 1)
	}
	all, _, err := st.Failures.Window(t.Context(), now.Add(-time.Minute), now)
	if err != nil || len(all) != 5 {
		t.Fatalf("the window: %d rows (%v), want 5", len(all), err)
	}
	if !slices.IsSortedFunc(all, func(a, b circuit.FailureRow) int { return a.Second.Compare(b.Second) }) {
		t.Errorf("rows not in order of their seconds: %v", all)
	}
	span, ok := st.Failures.Cached(now.Add(-5*time.Second), now.Add(-3*time.Second), time.Minute)
	if !ok || len(span) != 3 || !span[0].Second.Equal(now.Add(-5*time.Second)) || !span[2].Second.Equal(now.Add(-3*time.Second)) {
		t.Fatalf("seconds -5 to -3: %v (%v), want the three rows of those seconds, both ends included", span, ok)
	}
	_ = append(span, circuit.FailureRow{ID: "appended by a caller"})
	if again, _ := st.Failures.Cached(now.Add(-5*time.Second), now, time.Minute); len(again) != 4 || again[3].ID == "appended by a caller" {
		t.Errorf("a caller's append reached the next caller: %v", again)
	}
	rec(1, 2) // the writer's row of second -1, written again with 2
	rows, _, err := st.Failures.Window(t.Context(), now.Add(-time.Minute), now)
	if err != nil || len(rows) != 5 || rows[4].Count != 2 {
		t.Errorf("after the row of second -1 changed: %v (%v), want it counting 2", rows, err)
	}
	if all[4].Count != 1 {
		t.Errorf("the rows handed out before the change changed under their caller: %v", all[4])
	}
	rec(7, 1) // a row between two others
	rows, _, err = st.Failures.Window(t.Context(), now.Add(-time.Minute), now)
	if err != nil || len(rows) != 6 || !rows[1].Second.Equal(now.Add(-7*time.Second)) ||
		!slices.IsSortedFunc(rows, func(a, b circuit.FailureRow) int { return a.Second.Compare(b.Second) }) {
		t.Errorf("after a row of second -7 came: %v (%v), want it second of six, in order", rows, err)
	}
}

// A circuit's stamp, taken from the rows last read, is the same while its
// rows are, changes when one of them changes or leaves the span, and is
// not given while a write through the reader is not yet read back.
func TestAStampSaysWhetherACircuitsRowsChanged(t *testing.T) {
	svc, _ := testenv.Storage(t)
	if err := svc.CreateTable(t.Context(), storage.TableFailures); err != nil {
		t.Fatal(err)
	}
	st := storage.New(svc)
	now := time.Now().UTC().Truncate(time.Second)
	rec := func(function string, ago, count int) {
		t.Helper()
		if err := st.Failures.Record(t.Context(), "vm-1", []storage.Report{{App: "orders", Function: function, Second: now.Add(-time.Duration(ago) * time.Second), Count: count}}); err != nil {
			t.Fatal(err)
		}
	}
	read := func() {
		t.Helper()
		if _, _, err := st.Failures.Window(t.Context(), now.Add(-time.Minute), now); err != nil {
			t.Fatal(err)
		}
	}
	stamp := func(from time.Time) circuit.Stamp {
		t.Helper()
		s, ok := st.Failures.Stamp("orders/Process", from, now)
		if !ok {
			t.Fatal("no stamp right after a read")
		}
		return s
	}
	rec("Process", 9, 1)
	rec("Process", 3, 2)
	read()
	first := stamp(now.Add(-30 * time.Second))
	if first.Rows != 2 || first.Failures != 3 {
		t.Fatalf("stamp %+v, want 2 rows of 3 failures", first)
	}
	rec("Other", 2, 5) // another circuit's row
	if _, ok := st.Failures.Stamp("orders/Process", now.Add(-30*time.Second), now); ok {
		t.Error("a stamp was given while a write through the reader was not read back")
	}
	read()
	if again := stamp(now.Add(-30 * time.Second)); again != first {
		t.Errorf("another circuit's row changed this one's stamp: %+v, then %+v", first, again)
	}
	rec("Process", 3, 4) // the row of second -3 written again
	read()
	if changed := stamp(now.Add(-30 * time.Second)); changed == first || changed.Failures != 5 {
		t.Errorf("a changed row left the stamp %+v (before %+v)", changed, first)
	}
	if slid := stamp(now.Add(-5 * time.Second)); slid.Rows != 1 {
		t.Errorf("the row of second -9 out of the span still stamped: %+v", slid)
	}
}

// One report of 75 timeouts and 30 deadlocks in one second, the deadlocks
// last, is grouped as what it said: 75 and 30, not 105 of the last text
// (a row kept only its writer's last text). Past circuit.MaxRowErrors
// kinds, a row's other failures are counted as other errors; a column
// another program wrote is read within the row's own count, and one that
// does not read leaves the row's Sample to stand for it.
func TestARowKeepsItsFailuresByKindOfError(t *testing.T) {
	svc, _ := testenv.Storage(t)
	if err := svc.CreateTable(t.Context(), storage.TableFailures); err != nil {
		t.Fatal(err)
	}
	st := storage.New(svc)
	now := time.Now().UTC().Truncate(time.Second)
	second := now.Add(-2 * time.Second)
	var rs []storage.Report
	for i := range 75 {
		rs = append(rs, storage.Report{App: "orders", Function: "Process", Second: second, Count: 1, Sample: "Timeout talking to inventory after " + strconv.Itoa(1000+i) + " ms"})
	}
	rs = append(rs, storage.Report{App: "orders", Function: "Process", Second: second, Count: 30,
		Sample: "Microsoft.Data.SqlClient.SqlException: Transaction (Process ID 71) was deadlocked on lock resources with another process"})
	if err := st.Failures.Record(t.Context(), "api.one", rs); err != nil {
		t.Fatal(err)
	}
	ci := circuit.Circuit{AppID: "orders", Function: "Process", Settings: circuit.Settings{Window: time.Minute}, State: circuit.Closed}
	groups, other, _, err := errortexts.OfCircuit(t.Context(), st.Failures.Reader(), ci, now, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(groups) != 2 || other != 0 || groups[0].Count != 75 || !strings.HasPrefix(groups[0].Text(), "Timeout talking") ||
		groups[1].Count != 30 || !strings.Contains(groups[1].Text(), "deadlocked") {
		t.Fatalf("groups %+v (other %d); want 75 timeouts, then 30 deadlocks", groups, other)
	}

	// Ten kinds in one second: the eight most counted are kept apart.
	rs = rs[:0]
	for k := range 10 {
		rs = append(rs, storage.Report{App: "orders", Function: "Mixed", Second: second, Count: 20 - k, Sample: "error kind " + string(rune('a'+k))})
	}
	if err := st.Failures.Record(t.Context(), "api.two", rs); err != nil {
		t.Fatal(err)
	}
	ci.Function = "Mixed"
	groups, _, _, err = errortexts.OfCircuit(t.Context(), st.Failures.Reader(), ci, now, 20)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for _, g := range groups {
		got[g.Text()] = g.Count
	}
	if len(groups) != 9 || got["error kind a"] != 20 || got["error kind h"] != 13 || got[errortexts.OtherKinds] != 12+11 {
		t.Errorf("ten kinds grouped %v; want kinds a to h apart and the 23 failures of i and j as other errors", got)
	}

	// Rows other programs wrote: a column that claims more than the row
	// counts, and one that does not read.
	type row struct {
		tablestore.Meta
		App, Function  string
		Second         time.Time
		Count          int32
		Sample, Errors string
	}
	for w, errs := range map[string]string{"liar": `[{"text":"A lie","count":5000},{"text":"Never","count":3}]`, "garbled": `{not json`} {
		r := &row{Meta: tablestore.Meta{PartitionKey: storage.FailurePartition(second), RowKey: storage.FailureRowKey("orders", "Foreign", second, w)},
			App: "orders", Function: "Foreign", Second: second, Count: 4, Sample: "Its own sample", Errors: errs}
		if err := svc.Table(storage.TableFailures).Insert(t.Context(), r); err != nil {
			t.Fatal(err)
		}
	}
	ci.Function = "Foreign"
	groups, _, _, err = errortexts.OfCircuit(t.Context(), st.Failures.Reader(), ci, now, 20)
	if err != nil {
		t.Fatal(err)
	}
	got = map[string]int{}
	for _, g := range groups {
		got[g.Text()] = g.Count
	}
	if len(got) != 2 || got["A lie"] != 4 || got["Its own sample"] != 4 {
		t.Errorf("foreign rows grouped %v; want the liar's 4 failures as its first kind and the garbled row's 4 as its sample", got)
	}
}

// One report of 10,000 failures in one second, each with a text of its
// own kind, tracks at most 32 kinds while the row is written: the row
// keeps the 8 first of them and counts the rest as other errors, all
// 10,000 counted.
func TestARowOfManyKindsTracksABoundedNumber(t *testing.T) {
	svc, _ := testenv.Storage(t)
	if err := svc.CreateTable(t.Context(), storage.TableFailures); err != nil {
		t.Fatal(err)
	}
	st := storage.New(svc)
	now := time.Now().UTC().Truncate(time.Second)
	rs := make([]storage.Report, 10_000)
	for i := range rs {
		rs[i] = storage.Report{App: "orders", Function: "Many", Second: now.Add(-time.Second), Count: 1, Sample: "kind " + strings.Repeat(string(rune('a'+i%26)), 1+i/26)}
	}
	if err := st.Failures.Record(t.Context(), "api.many", rs); err != nil {
		t.Fatal(err)
	}
	ci := circuit.Circuit{AppID: "orders", Function: "Many", Settings: circuit.Settings{Window: time.Minute}, State: circuit.Closed}
	groups, other, _, err := errortexts.OfCircuit(t.Context(), st.Failures.Reader(), ci, now, 20)
	if err != nil {
		t.Fatal(err)
	}
	total, others := other, 0
	for _, g := range groups {
		total += g.Count
		if g.Fingerprint == errortexts.OtherKinds {
			others = g.Count
		}
	}
	if total != 10_000 || len(groups) != circuit.MaxRowErrors+1 || others != 10_000-circuit.MaxRowErrors {
		t.Errorf("%d groups, %d failures, %d as other errors; want 8 kinds and other errors, 10,000 in all", len(groups), total, others)
	}
}
