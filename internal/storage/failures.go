package storage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/errortexts"
	"github.com/fusebox/fusebox/internal/ingest"
	"github.com/fusebox/fusebox/internal/tablestore"
)

// Failures holds failure counts as functions report them: one row per
// (app, function, second, writer), partitioned by the UTC minute of that
// second and, within it, by the writer's shard (FailureShardPartition). Many writers never touch the same row, and a reader of the last
// W seconds reads only the partitions of those minutes and only rows that
// exist: healthy circuits cost nothing.
//
// Window keeps the rows it has read and, between full rereads every minute,
// asks the service only for rows changed since its previous read (see
// incremental), so a tick of the evaluator or a dashboard refresh costs
// what changed.
type Failures struct {
	table *tablestore.Table

	// readMu lets one read of the service run at a time; inc is its.
	readMu sync.Mutex
	inc    incremental

	// mu guards what the reads left: Recent copies it while a read is
	// under way, so a page never waits on the service.
	mu       sync.RWMutex
	rows     map[string]circuit.FailureRow
	sorted   []circuit.FailureRow         // rows by second, then id: what Window and Cached hand out, never written after
	from     time.Time                    // the earliest second the cache holds
	readTo   time.Time                    // the latest second a read asked for (less MaxSkew)
	readAt   time.Time                    // this machine's clock when the last read began
	wroteAt  time.Time                    // ...and when a Record through this reader last ended
	rejected map[string]circuit.Rejection // unreadable rows of the cached span
}

// Reader is another reader of the same rows with a cache of its own, for
// pages: what they read never changes what the evaluator's reader holds.
func (f *Failures) Reader() *Failures { return &Failures{table: f.table} }

// MaxSkew is how far ahead of Fusebox's clock a writer's seconds may be
// and still be counted: Window reads that far past its end, keeps such
// rows, and returns each once its second has come. HTTP ingest refuses
// seconds further ahead.
const MaxSkew = ingest.MaxSkew

// Window returns the failure rows for seconds in [from, to], and every
// unreadable row among those it holds: each call says the same of the same
// rows, whoever called before (the evaluator counts each once).
func (f *Failures) Window(ctx context.Context, from, to time.Time) ([]circuit.FailureRow, []circuit.Rejection, error) {
	f.readMu.Lock()
	defer f.readMu.Unlock()
	start := time.Now()
	f.mu.RLock()
	primed, cachedFrom := f.rows != nil, f.from
	f.mu.RUnlock()
	if !primed {
		f.inc = newIncremental(failureMargin)
	}
	full, since := f.inc.next(start)
	if from.Before(cachedFrom) || !primed {
		full, since = true, time.Time{}
	}
	rows, rejected, err := f.readFailures(ctx, from, to.Add(MaxSkew), since, f.inc.served, "", 0)
	if err != nil {
		return nil, nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if full {
		f.rows, f.from, f.rejected = make(map[string]circuit.FailureRow, len(rows)), from, map[string]circuit.Rejection{}
	}
	f.inc.done(full, start)
	changed := map[string]circuit.FailureRow{}
	for _, r := range rows {
		// An incremental read returns again the rows of its margin:
		// only a new or changed row changes the sorted rows.
		if old, ok := f.rows[r.ID]; !ok || !old.Same(r) {
			f.rows[r.ID], changed[r.ID] = r, r
		}
		f.inc.saw(r.Modified)
	}
	switch {
	case full || f.sorted == nil:
		f.sorted = sortedRows(f.rows)
	case len(changed) > 0:
		f.sorted = mergeRows(f.sorted, changed)
	}
	for _, r := range rejected {
		f.rejected[r.ID] = r
	}
	f.readAt, f.readTo = start, to
	return f.cached(from, to), f.rejectedRows(), nil
}

// Cached is Window's rows without a read, when the last read began no
// more than within ago, after the last Record through f ended, and
// covered [from, to] but for the seconds since; false otherwise. It never
// waits for a read under way.
func (f *Failures) Cached(from, to time.Time, within time.Duration) ([]circuit.FailureRow, bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	if f.rows == nil || from.Before(f.from) || time.Since(f.readAt) > within || f.readTo.Before(to.Add(-within)) || !f.readAt.After(f.wroteAt) {
		return nil, false
	}
	return f.cached(from, to), true
}

// Stamp is circuit.StampOf the rows kept, for a circuit's seconds in
// [from, to], when the last read began at most stampFresh ago, after the
// last Record through f ended, and covered [from, to]; false otherwise.
// The evaluator reads every second: a stamp says, without a read, whether
// a circuit's rows changed since an earlier one.
func (f *Failures) Stamp(circuitID string, from, to time.Time) (circuit.Stamp, bool) {
	rows, ok := f.Cached(from, to, stampFresh)
	if !ok {
		return circuit.Stamp{}, false
	}
	return circuit.StampOf(rows, circuitID, from, to), true
}

// stampFresh is how old the evaluator's read may be for a stamp: two of
// its ticks.
const stampFresh = 2 * time.Second

// PageRows reads failure rows for pages: the evaluator's, which it reads
// every second, while they are that fresh and cover what a page asks, so
// a view costs no read of the service and never waits on one; else the
// page's own reader's (Failures.Reader), so that what a page asks never
// changes what the evaluator reads.
type PageRows struct {
	Evaluator, Own *Failures
}

// pageFresh is how old the evaluator's read may be for a page.
const pageFresh = 5 * time.Second

// Window is Failures.Window for a page.
func (p PageRows) Window(ctx context.Context, from, to time.Time) ([]circuit.FailureRow, []circuit.Rejection, error) {
	if rows, ok := p.Evaluator.Cached(from, to, pageFresh); ok {
		return rows, nil, nil
	}
	return p.Own.Window(ctx, from, to)
}

// cached are the kept rows of seconds in [from, to]; under mu. They are
// a part of the sorted rows, shared by every caller until the next read
// that changes them replaces them (callers only read them; a clipped
// slice, so an append copies): a window of 10,000 rows copied for every
// view and tick cost a page more than all else it did (#36, P4).
func (f *Failures) cached(from, to time.Time) []circuit.FailureRow {
	i, _ := slices.BinarySearchFunc(f.sorted, from, func(r circuit.FailureRow, t time.Time) int { return r.Second.Compare(t) })
	j, found := slices.BinarySearchFunc(f.sorted, to, func(r circuit.FailureRow, t time.Time) int { return r.Second.Compare(t) })
	for found && j < len(f.sorted) && f.sorted[j].Second.Equal(to) {
		j++
	}
	return slices.Clip(f.sorted[i:j])
}

// sortedRows are rows by second, then id.
func sortedRows(rows map[string]circuit.FailureRow) []circuit.FailureRow {
	out := make([]circuit.FailureRow, 0, len(rows))
	for _, r := range rows {
		out = append(out, r)
	}
	slices.SortFunc(out, bySecond)
	return out
}

// mergeRows is a new sorted slice of sorted, its changed rows replaced:
// a read's few new rows cost a pass over the window, not a sort of it.
func mergeRows(sorted []circuit.FailureRow, changed map[string]circuit.FailureRow) []circuit.FailureRow {
	add := make([]circuit.FailureRow, 0, len(changed))
	for _, r := range changed {
		add = append(add, r)
	}
	slices.SortFunc(add, bySecond)
	out := make([]circuit.FailureRow, 0, len(sorted)+len(add))
	for _, r := range sorted {
		if _, ok := changed[r.ID]; ok {
			continue
		}
		for len(add) > 0 && bySecond(add[0], r) < 0 {
			out, add = append(out, add[0]), add[1:]
		}
		out = append(out, r)
	}
	return append(out, add...)
}

func bySecond(a, b circuit.FailureRow) int {
	if c := a.Second.Compare(b.Second); c != 0 {
		return c
	}
	return strings.Compare(a.ID, b.ID)
}

// rejectedRows are the unreadable rows kept, in key order; under mu.
func (f *Failures) rejectedRows() []circuit.Rejection {
	bad := make([]circuit.Rejection, 0, len(f.rejected))
	for _, r := range f.rejected {
		bad = append(bad, r)
	}
	sort.Slice(bad, func(i, j int) bool { return bad[i].ID < bad[j].ID })
	return bad
}

// FailurePartition is the UTC minute of a second, "yyyyMMddHHmm": the
// partition key of rows in the first layout, which writers outside
// Fusebox may still use, and the prefix of every partition of that minute.
func FailurePartition(t time.Time) string { return t.UTC().Format("200601021504") }

// FailureShards is how many partitions Fusebox spreads one minute of
// failure rows over. An Azure table partition serves about 2,000 entities
// a second; one row per writer, function and second in a single partition
// per minute would cap a fleet at 2,000 rows/s (say 50 instances with 40
// functions failing). Sixteen partitions a minute allow 32,000, above the
// account's 20,000 (docs/benchmarks.md, P6).
const FailureShards = 16

// FailureShardPartition is the partition of writer's rows for the minute of
// t: "yyyyMMddHHmm-nn", nn being the writer's shard. A writer keeps to one
// partition, so each flush is still one batch; writers spread over all.
func FailureShardPartition(t time.Time, writer string) string {
	return FailurePartition(t) + failureShard(writer)
}

// failureShard is the suffix of writer's partitions, "-nn".
func failureShard(writer string) string {
	h := fnv.New32a()
	_, _ = h.Write([]byte(writer))
	return fmt.Sprintf("-%02d", h.Sum32()%FailureShards)
}

// failureMinuteOf is the minute a failure partition key names, in either
// layout, or "" for a key that is neither.
func failureMinuteOf(pk string) string {
	minute, shard, sharded := strings.Cut(pk, "-")
	if len(minute) != len("200601021504") {
		return ""
	}
	if sharded {
		n, err := strconv.Atoi(shard)
		if err != nil || len(shard) != 2 || n < 0 || n >= FailureShards {
			return ""
		}
	}
	return minute
}

// FailureRowKey is "<app>|<function>|<ss>|<writer>".
func FailureRowKey(app, function string, second time.Time, writer string) string {
	return fmt.Sprintf("%s|%s|%02d|%s", app, function, second.UTC().Second(), writer)
}

var writerPattern = regexp.MustCompile(`^[A-Za-z0-9._:-]{1,100}$`)

// ValidWriter reports whether a writer id is usable in row keys.
func ValidWriter(w string) bool { return writerPattern.MatchString(w) }

type failureRow struct {
	tablestore.Meta           // PartitionKey: yyyyMMddHHmm; RowKey: app|function|ss|writer
	App             string    // app id
	Function        string    // function name
	Second          time.Time // the second the failures happened in (UTC, whole second)
	Count           int32     // failures in that second from this writer (its running total)
	Successes       int32     // optional: successes in that second from this writer (its running total)
	Throttling      int32     // optional: the failures among Count whose error looked like a downstream pushing back
	Sample          string    // optional: one error message, for people
	Errors          string    // optional: the failures by kind of error, JSON [{"text","count"}], most first (circuit.MaxRowErrors)
	TraceParent     string    // optional: the W3C traceparent of the request that reported them
	Instance        string    // optional: the instance that reported them (HTTP reports); else the writer is
	Via             string    // optional: "records" or "failed-records" for counts of Executed log records (circuit.Via); else reported as such
	Alone           bool      // optional: the records' function had no span lately, so they count at once (circuit.RecordsAlone); an older reader ignores it and waits

	kinds []kindCount // Record's sums of Errors before they are written
}

// kindCount is one kind of error's failures in a row being written.
type kindCount struct {
	fingerprint, text string
	count             int
}

// Report is a count of failures of one function in one second.
type Report = ingest.Report

// Record writes reports from one writer: counts for the same function and
// second are added up into one row, rows are written in batches of one
// partition. A writer id must be unique to the writer; writing the same
// (function, second) again replaces that writer's row, so a writer that
// flushes repeatedly must send its running total.
func (f *Failures) Record(ctx context.Context, writer string, reports []Report) error {
	if !ValidWriter(writer) {
		return fmt.Errorf("storage: writer id %q: use 1 to 100 letters, digits, . _ : or -", writer)
	}
	type key struct {
		app, function string
		second        int64
	}
	// A page takes the evaluator's rows only if they were read after this
	// write ended (Cached): what this instance was just told shows at once.
	defer func() {
		f.mu.Lock()
		f.wroteAt = time.Now()
		f.mu.Unlock()
	}()
	sums := map[key]*failureRow{}
	shard := failureShard(writer)
	for _, r := range reports {
		sec := r.Second.UTC().Truncate(time.Second)
		k := key{r.App, r.Function, sec.Unix()}
		row, ok := sums[k]
		if !ok {
			row = &failureRow{Meta: tablestore.Meta{PartitionKey: FailurePartition(sec) + shard, RowKey: FailureRowKey(r.App, r.Function, sec, writer)},
				App: r.App, Function: r.Function, Second: sec}
			sums[k] = row
		}
		row.Count += int32(r.Count)
		row.Successes += int32(r.Successes)
		row.Throttling += int32(r.Throttling)
		if r.Sample != "" {
			row.Sample = truncate(r.Sample, 1024)
		}
		if r.Count > 0 {
			row.addKind(r.Sample, r.Count)
		}
		if r.TraceParent != "" && len(r.TraceParent) <= 64 {
			row.TraceParent = r.TraceParent
		}
		if r.Instance != "" {
			row.Instance = truncate(r.Instance, 100)
		}
		row.Via, row.Alone = viaColumns(r.Via)
	}
	byPartition := map[string][]*failureRow{}
	for _, row := range sums {
		row.Errors = errorsColumn(row.kinds)
		byPartition[row.PartitionKey] = append(byPartition[row.PartitionKey], row)
	}
	for pk, rows := range byPartition {
		sort.Slice(rows, func(i, j int) bool { return rows[i].RowKey < rows[j].RowKey })
		for start := 0; start < len(rows); start += tablestore.MaxBatchActions {
			b := f.table.NewBatch(pk)
			for _, row := range rows[start:min(start+tablestore.MaxBatchActions, len(rows))] {
				if err := b.Upsert(row); err != nil {
					return fmt.Errorf("storage: record failures: %w", err)
				}
			}
			if err := b.Submit(ctx); err != nil {
				return fmt.Errorf("storage: record failures: %w", err)
			}
		}
	}
	return nil
}

// addKind counts failures of text (cut at 1 kB) under its kind of error,
// its latest text kept. A row tracks at most maxTrackedKinds kinds while
// it is written (errorsColumn keeps the 8 most counted of them): past
// that, a text is neither folded nor looked up, and its failures are
// counted as other errors. One request of 10,000 distinct texts in one
// second would otherwise cost 10,000 folds and a quadratic search.
func (row *failureRow) addKind(text string, n int) {
	if len(row.kinds) >= maxTrackedKinds {
		return // the row's Count holds them: read back as other errors
	}
	text = truncate(text, 1024)
	fp := errortexts.Kind(text)
	for i := range row.kinds {
		if row.kinds[i].fingerprint == fp {
			row.kinds[i].count += n
			if text != "" {
				row.kinds[i].text = text
			}
			return
		}
	}
	row.kinds = append(row.kinds, kindCount{fp, text, n})
}

// maxTrackedKinds bounds the kinds of error a row being written tracks.
const maxTrackedKinds = 32

// errorsColumn is a row's Errors: its kinds of error, most failures first
// (the first reported first among equals), at most circuit.MaxRowErrors;
// the failures of the others are counted as other errors by the reader.
// A row of one kind of error needs no column: its Sample says it.
func errorsColumn(kinds []kindCount) string {
	if len(kinds) < 2 {
		return ""
	}
	slices.SortStableFunc(kinds, func(a, b kindCount) int { return b.count - a.count })
	kept := make([]circuit.ErrorCount, 0, min(len(kinds), circuit.MaxRowErrors))
	for _, k := range kinds[:min(len(kinds), circuit.MaxRowErrors)] {
		kept = append(kept, circuit.ErrorCount{Text: k.text, Count: k.count})
	}
	b, err := json.Marshal(kept)
	if err != nil {
		return "" // strings and numbers always marshal
	}
	return string(b)
}

// readErrors reads a row's Errors column, written by Fusebox or by
// another program: entries with no failures are dropped, texts cut at
// 1 kB, at most circuit.MaxRowErrors kept, and never more failures than
// the row counts. A column that does not read is as none: the row's
// Sample stands for all its failures, as for a row that never had one.
func readErrors(column string, count int) []circuit.ErrorCount {
	if column == "" || len(column) > maxErrorsColumn {
		return nil
	}
	var all []circuit.ErrorCount
	if json.Unmarshal([]byte(column), &all) != nil {
		return nil
	}
	out := make([]circuit.ErrorCount, 0, min(len(all), circuit.MaxRowErrors))
	left := count
	for _, e := range all {
		if e.Count <= 0 || left <= 0 || len(out) == circuit.MaxRowErrors {
			continue
		}
		e.Count = min(e.Count, left)
		left -= e.Count
		e.Text = truncate(e.Text, 1024)
		out = append(out, e)
	}
	return out
}

// maxErrorsColumn bounds the Errors text read: eight texts of 1 kB,
// escaped, fit well within it.
const maxErrorsColumn = 32 << 10

// ownWriter says a writer id is one Fusebox gives the rows of an HTTP
// request or an export (ingest: api., content., idem.), which names a
// request, not an instance.
func ownWriter(w string) bool {
	return strings.HasPrefix(w, "api.") || strings.HasPrefix(w, "content.") || strings.HasPrefix(w, "idem.")
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8Start(s[n]) {
		n--
	}
	return s[:n]
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }

// ReadFailures returns the rows for seconds in [from, to], and the rows that
// do not parse. When changedSince is not zero, only rows the service has
// modified since then are read (an incremental read).
func (f *Failures) ReadFailures(ctx context.Context, from, to, changedSince time.Time) ([]circuit.FailureRow, []circuit.Rejection, error) {
	return f.readFailures(ctx, from, to, changedSince, nil, "", 0)
}

// CircuitWindow reads one circuit's rows for seconds in [from, to]
// afresh: every minute's partitions, only that function's row keys. It is
// the ingest path's read, for a circuit a report may have tripped.
func (f *Failures) CircuitWindow(ctx context.Context, app, function string, from, to time.Time) ([]circuit.FailureRow, error) {
	rows, _, err := f.readFailures(ctx, from, to, time.Time{}, nil, app+"|"+function+"|", 0)
	return rows, err
}

// CircuitSamples reads at most limit of one circuit's rows of [from, to]
// with their error texts, oldest minutes first; more says rows were left
// unread. What a page reads for people is bounded before it is read.
func (f *Failures) CircuitSamples(ctx context.Context, app, function string, from, to time.Time, limit int) (rows []circuit.FailureRow, more bool, err error) {
	rows, _, err = f.readFailures(ctx, from, to, time.Time{}, nil, app+"|"+function+"|", limit+1)
	if len(rows) > limit {
		return rows[:limit], true, err
	}
	return rows, false, err
}

// readFailures reads the rows of [from, to]; limit > 0 stops at that many.
func (f *Failures) readFailures(ctx context.Context, from, to, changedSince time.Time, served func(time.Time), rowPrefix string, limit int) ([]circuit.FailureRow, []circuit.Rejection, error) {
	// Every partition of the minutes from..to, in both layouts: "…1246"
	// and "…1246-07" sort at or after the minute and before the next one.
	filter := tablestore.And(
		tablestore.Ge("PartitionKey", FailurePartition(from)),
		tablestore.Lt("PartitionKey", FailurePartition(to.Add(time.Minute))),
	)
	if rowPrefix != "" {
		filter = tablestore.And(filter, tablestore.RowKeyPrefix(rowPrefix))
	}
	if !changedSince.IsZero() {
		filter = tablestore.And(filter, tablestore.Ge("Timestamp", changedSince))
	}
	var out []circuit.FailureRow
	var rejected []circuit.Rejection
	q := tablestore.Query{Filter: filter, Served: served}
	if rowPrefix == "" {
		// The evaluator's and the pages' windows carry no text: a row's
		// sample (up to 1 kB, beside some 200 bytes of counts) is left in
		// the store, not sent, decoded and dropped 10,000 times a reread.
		q.Select = windowColumns
	}
	if limit > 0 && limit < 1000 {
		q.Top = int32(limit) // a page holds up to 1,000 rows: ask for no more than needed
	}
	for row, err := range tablestore.Rows[failureRow](ctx, f.table, q) {
		var rowErr *tablestore.RowError
		if errors.As(err, &rowErr) {
			rejected = append(rejected, circuit.Rejection{ID: rowErr.PartitionKey + "/" + rowErr.RowKey, Reason: rowErr.Err.Error()})
			continue
		}
		if err != nil {
			return nil, nil, fmt.Errorf("storage: read failures: %w", err)
		}
		id := row.PartitionKey + "/" + row.RowKey
		if why := checkFailureRow(row); why != "" {
			rejected = append(rejected, circuit.Rejection{ID: id, Reason: why})
			continue
		}
		if row.Second.Before(from) || row.Second.After(to) {
			continue
		}
		source, named := row.Instance, row.Instance != ""
		if source == "" {
			source = row.RowKey[strings.LastIndexByte(row.RowKey, '|')+1:]
			named = !ownWriter(source)
		}
		via, _ := viaOf(row.Via, row.Alone)
		fr := circuit.FailureRow{ID: id, Via: via, Circuit: row.App + "/" + row.Function, Second: row.Second, Count: int(row.Count), Successes: int(row.Successes),
			Modified: row.Timestamp, TraceParent: row.TraceParent, Source: source, Named: named,
			Throttling: int(min(max(row.Throttling, 0), row.Count))} // someone else's row: never more than its failures
		if rowPrefix != "" {
			fr.Sample = truncate(row.Sample, 1024) // someone else's row: bounded again
			fr.Errors = readErrors(row.Errors, fr.Count)
		}
		out = append(out, fr)
		if limit > 0 && len(out) == limit {
			break
		}
	}
	return out, rejected, nil
}

// windowColumns are what a window's rows are read with: everything but
// the error sample.
var windowColumns = []string{"PartitionKey", "RowKey", "Timestamp", "App", "Function", "Second", "Count", "Successes", "Throttling", "TraceParent", "Instance", "Via", "Alone"}

// viaColumns is how each circuit.Via is written: the Via column, and
// Alone for records that wait for no span (a column of its own, so that an
// instance that does not know it reads the row as records that wait);
// viaOf reads them back.
func viaColumns(v circuit.Via) (string, bool) {
	switch v {
	case circuit.Records:
		return "records", false
	case circuit.FailedRecords:
		return "failed-records", false
	case circuit.RecordsAlone:
		return "records", true
	case circuit.FailedRecordsAlone:
		return "failed-records", true
	}
	return "", false
}

func viaOf(column string, alone bool) (circuit.Via, bool) {
	switch column {
	case "":
		return circuit.Direct, true
	case "records":
		if alone {
			return circuit.RecordsAlone, true
		}
		return circuit.Records, true
	case "failed-records":
		if alone {
			return circuit.FailedRecordsAlone, true
		}
		return circuit.FailedRecords, true
	}
	return 0, false
}

// checkFailureRow says what is wrong with a row another program wrote.
func checkFailureRow(r failureRow) string {
	parts := strings.Split(r.RowKey, "|")
	switch {
	case len(parts) != 4:
		return "RowKey must be app|function|ss|writer"
	case r.App == "" || r.Function == "":
		return "App and Function are required"
	case parts[0] != r.App || parts[1] != r.Function:
		return "App and Function do not match the RowKey"
	case !circuit.ValidAppID(r.App):
		return "App is not a valid app id"
	case r.Second.IsZero():
		return "Second is missing or not a date-time"
	case failureMinuteOf(r.PartitionKey) == "":
		return fmt.Sprintf("PartitionKey must be the UTC minute, yyyyMMddHHmm, optionally followed by -00 to -%02d", FailureShards-1)
	case FailurePartition(r.Second) != failureMinuteOf(r.PartitionKey):
		return "Second is not in the minute the PartitionKey names"
	case fmt.Sprintf("%02d", r.Second.UTC().Second()) != parts[2]:
		return "Second does not match the seconds in the RowKey"
	case r.Count < 0 || r.Successes < 0:
		return "Count and Successes must not be negative"
	case r.Count == 0 && r.Successes == 0:
		return "a row needs a Count of failures or Successes of at least 1"
	}
	if _, ok := viaOf(r.Via, r.Alone); !ok {
		return `Via must be absent, "records" or "failed-records"`
	}
	return ""
}

// DeleteBefore removes failure rows of minutes before t, partition by
// partition, and returns how many it removed.
func (f *Failures) DeleteBefore(ctx context.Context, t time.Time) (int, error) {
	n, err := deleteMatching(ctx, f.table, tablestore.Lt("PartitionKey", FailurePartition(t)))
	if err != nil {
		return n, fmt.Errorf("storage: prune failures: %w", err)
	}
	return n, nil
}

// First is the earliest second of [from, to] in which function failed.
// It reads at most firstFailureRows, oldest minutes first: a minute's
// rows of every shard sort by shard before second, so the earliest is
// the least of them, not the first read.
func (f *Failures) First(ctx context.Context, app, function string, from, to time.Time) (time.Time, bool, error) {
	rows, _, err := f.readFailures(ctx, from, to, time.Time{}, nil, app+"|"+function+"|", firstFailureRows)
	if err != nil {
		return time.Time{}, false, err
	}
	var first time.Time
	for _, r := range rows {
		if r.Count > 0 && (first.IsZero() || r.Second.Before(first)) {
			first = r.Second
		}
	}
	return first, !first.IsZero(), nil
}

// firstFailureRows bounds First's read.
const firstFailureRows = 500
