package migrations_test

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/lease"
	"github.com/fusebox/fusebox/internal/migrate"
	"github.com/fusebox/fusebox/internal/storage"
	"github.com/fusebox/fusebox/internal/tablestore"
	"github.com/fusebox/fusebox/internal/testenv"
	"github.com/fusebox/fusebox/migrations"
)

// release11Circuit is a circuit row exactly as the release before
// migration 12 wrote it (storage.circuitRow at 83c771d): settings and
// state side by side in columns.
type release11Circuit struct {
	tablestore.Meta            // PartitionKey: app id; RowKey: "c|" + function
	Function           string  // as given, for readers that do not parse keys
	Threshold          int32   // failures
	WindowSeconds      int32   // length of the rolling window
	FailureRatio       float64 // optional: trip on this share of failed calls instead of a count
	MinCalls           int32   // with FailureRatio: calls in the window before it is weighed
	NoSuccess          bool    // optional: also trip when calls fail and none succeeds for a whole window
	Recipients         string  // comma-separated addresses
	Channels           string  // comma-separated channel ids
	EscalateTo         string  // comma-separated addresses and channel ids told when an episode goes unacknowledged...
	EscalateSeconds    int32   // ...this long; 0: no escalation
	EventHub           string  // optional: hub[/consumer group] the function consumes
	HubRetentionHours  int32   // optional: that hub's message retention
	MinInstances       int32   // optional: a quorum of instances
	ThrottleThreshold  int32   // optional: lower concurrency on more than this many failures
	ThrottleQuiet      int32   // seconds each throttle stage holds quiet before a step up; 0: the default
	ThrottleKind       string  // the trigger kind a throttle lowers; empty: from EventHub or Queue
	ThrottleAsk        bool    // ask by notice before lowering
	ThrottleOnly429    bool    // count only failures that look like a downstream pushing back
	ThrottleWords      string  // more words that say so, one a line
	Queue              string  // optional: the queue that triggers it
	Parking            string  // optional: the queue its code parks events in
	AutoResume         bool
	Shadow             bool // the switch is disarmed: state and alerts only
	RunbookURL         string
	RunbookNote        string
	CooldownSeconds    int32
	MaxCooldownSeconds int32  // cap of the doubling cooldown; 0: 16 × the cooldown
	State              string // closed, open, half-open, forced-open
	Episode            int64
	Streak             int32 // the evaluator's consecutive trips
	ChangedAt          time.Time
	Reason             string
	Held               bool   // the last change was a trip the app's guardrail held
	ThrottleStage      int32  // while throttled: the ramp's step
	ThrottleSince      int64  // the episode the current throttle began with
	Ramping            bool   // that throttle began with a resume
	Asked              bool   // the last change asked to apply a throttle
	Lowered            string // JSON: the settings a throttle changed, as they were before (null: absent)
	LoweredKind        string // the trigger kind they were read for
	Released           string // the settings a throttle handed back, and why
	AppliedEpisode     int64
	AppliedAt          time.Time // when the trigger was set for AppliedEpisode
	ApplyError         string    // why the trigger could not be set for Episode
	ApplyRetryAt       time.Time
	ApplyAttempts      int32
	Drift              string
	DriftSince         time.Time
	Confirmation       string // what the host reported after the write: "", confirmed, contradicted, unconfirmable
	ConfirmedEpisode   int64
	ConfirmedAt        time.Time
	Incarnation        string // random, set at creation: tells a re-created circuit from the deleted one
	RecentChanges      string // Unix seconds of the last changes, comma-separated, oldest first
	AckedEpisode       int64  // the episode someone acknowledged: its reminders stop
	AckedBy            string
	AckedAt            time.Time
	FenceLease         string // the lease under which the state was last written
	FenceGeneration    int64  // and its generation: older generations are refused
}

// Rows the last release wrote come through migrations 12 and 13 with
// every setting, every piece of state and the whole actuation they held;
// the columns are gone, one Settings column holds the settings and the
// actuation has its own row; a row whose columns make no circuit is left
// as it was, for the bad-rows page. Run twice, they change nothing more.
func TestCircuitRowsOfTheLastReleaseKeepEverything(t *testing.T) {
	svc, migrateTo := newSchema(t)
	ctx := t.Context()
	migrateTo(11)
	at := time.Date(2026, 12, 1, 9, 30, 0, 0, time.UTC)
	full := release11Circuit{Meta: tablestore.Meta{PartitionKey: "orders", RowKey: "c|Process"}, Function: "Process",
		Threshold: 100, WindowSeconds: 30, FailureRatio: 0.5, MinCalls: 200, NoSuccess: true, Recipients: "ops@example.com,lead@example.com",
		Channels: "oncall", EscalateTo: "boss@example.com,pager", EscalateSeconds: 1800, EventHub: "orders/fusebox", HubRetentionHours: 24,
		MinInstances: 2, ThrottleThreshold: 20, ThrottleQuiet: 300, ThrottleKind: "eventhubs", ThrottleAsk: true, ThrottleOnly429: true,
		ThrottleWords: "quota exceeded\nslow down", Queue: "orders-in", Parking: "orders-parked", AutoResume: true, Shadow: true,
		RunbookURL: "https://wiki.example.com/orders", RunbookNote: "Check the database first", CooldownSeconds: 60, MaxCooldownSeconds: 3600,
		State: "open", Episode: 7, Streak: 2, ChangedAt: at, Reason: "more than 100 failures in 30s", AppliedEpisode: 7, AppliedAt: at.Add(time.Second),
		Confirmation: "confirmed", ConfirmedEpisode: 7, ConfirmedAt: at.Add(5 * time.Second), Drift: "someone switched it back on", DriftSince: at.Add(time.Hour),
		Incarnation: "abc123", RecentChanges: "1764581400",
		AckedEpisode: 7, AckedBy: "demo", AckedAt: at.Add(time.Minute), FenceLease: "evaluator", FenceGeneration: 4}
	plain := release11Circuit{Meta: tablestore.Meta{PartitionKey: "billing", RowKey: "c|Charge"}, Function: "Charge",
		Threshold: 5, WindowSeconds: 60, State: "closed", Incarnation: "def456"}
	broken := release11Circuit{Meta: tablestore.Meta{PartitionKey: "billing", RowKey: "c|Broken"}, Function: "Broken", Threshold: 0, WindowSeconds: 60, State: "closed"}
	tbl := svc.Table(storage.TableCircuits)
	for _, r := range []*release11Circuit{&full, &plain, &broken} {
		if err := tbl.Insert(ctx, r); err != nil {
			t.Fatal(err)
		}
	}

	for range 2 {
		migrateTo(len(migrations.Steps()))
		if err := storage.MoveCircuitSettings(ctx, svc); err != nil { // as after a crash midway
			t.Fatal(err)
		}
		if err := storage.MoveCircuitActuation(ctx, svc); err != nil {
			t.Fatal(err)
		}
	}

	st := storage.New(svc)
	got, err := st.Circuits.Get(ctx, "orders", "Process")
	if err != nil {
		t.Fatal(err)
	}
	want := circuit.Settings{Threshold: 100, Window: 30 * time.Second, Rule: circuit.Rule{Ratio: 0.5, MinCalls: 200, NoSuccess: true, MinInstances: 2},
		Recipients: []string{"ops@example.com", "lead@example.com"}, Channels: []string{"oncall"},
		Escalate: circuit.Escalation{To: []string{"boss@example.com", "pager"}, After: 30 * time.Minute}, EventHub: "orders/fusebox", HubRetention: 24 * time.Hour,
		Queue: "orders-in", Parking: "orders-parked", Policy: circuit.Policy{AutoResume: true, Cooldown: time.Minute, MaxCooldown: time.Hour},
		Throttle: circuit.Throttle{Threshold: 20, Quiet: 5 * time.Minute, Kind: "eventhubs", Ask: true, OnlyThrottling: true, Words: []string{"quota exceeded", "slow down"}},
		Shadow:   true, Runbook: circuit.Runbook{URL: "https://wiki.example.com/orders", Note: "Check the database first"}}
	if !reflect.DeepEqual(got.Settings, want) {
		t.Errorf("settings after migration 12:\n%+v\nwant\n%+v", got.Settings, want)
	}
	if got.State != circuit.Open || got.Episode != 7 || got.Streak != 2 || !got.ChangedAt.Equal(at) || got.Reason != full.Reason ||
		got.AppliedEpisode != 7 || !got.AppliedAt.Equal(full.AppliedAt) || got.Confirmation != circuit.Confirmed || got.ConfirmedEpisode != 7 ||
		!got.ConfirmedAt.Equal(full.ConfirmedAt) || got.Drift != full.Drift || !got.DriftSince.Equal(full.DriftSince) || got.Actuation.Version == "" ||
		got.AckedEpisode != 7 || got.AckedBy != "demo" || !got.AckedAt.Equal(full.AckedAt) || got.Incarnation != "abc123" || len(got.RecentChanges) != 1 {
		t.Errorf("state and actuation after migrations 12 and 13: %+v", got)
	}
	var raw struct {
		release11Circuit
		Settings string
	}
	if err := tbl.Get(ctx, "orders", "c|Process", &raw); err != nil {
		t.Fatal(err)
	}
	if raw.Threshold != 0 || raw.RunbookURL != "" || raw.Recipients != "" || !strings.Contains(raw.Settings, `"runbook_url":"https://wiki.example.com/orders"`) {
		t.Errorf("the row after migration 12 still has columns (threshold %d, recipients %q) or no Settings (%q)", raw.Threshold, raw.Recipients, raw.Settings)
	}
	if raw.AppliedEpisode != 0 || raw.Confirmation != "" || raw.Drift != "" {
		t.Errorf("the circuit's row after migration 13 still has its actuation (applied %d, %q, drift %q)", raw.AppliedEpisode, raw.Confirmation, raw.Drift)
	}
	if raw.FenceLease != "evaluator" || raw.FenceGeneration != 4 {
		t.Errorf("fence after migration 12: %q %d, want evaluator 4", raw.FenceLease, raw.FenceGeneration)
	}
	if c, err := st.Circuits.Get(ctx, "billing", "Charge"); err != nil || c.Threshold != 5 || c.Window != time.Minute || c.Recipients != nil {
		t.Errorf("a plain circuit after migration 12: %+v, %v", c.Settings, err)
	}
	var left release11Circuit
	if err := tbl.Get(ctx, "billing", "c|Broken", &left); err != nil || left.WindowSeconds != 60 {
		t.Errorf("a row that makes no circuit was changed: %+v, %v", left, err)
	}
	if _, err := st.Circuits.Get(ctx, "billing", "Broken"); err == nil {
		t.Error("a row with threshold 0 read as a circuit")
	}
}

// During a rolling upgrade an instance of the last release may still
// write a row in columns after migration 12 ran: the row reads, and a
// transition written by this release keeps its settings.
func TestARowTheLastReleaseWritesAfterTheMigrationKeepsItsSettings(t *testing.T) {
	svc, migrateTo := newSchema(t)
	ctx := t.Context()
	migrateTo(len(migrations.Steps()))
	old := release11Circuit{Meta: tablestore.Meta{PartitionKey: "orders", RowKey: "c|Process"}, Function: "Process",
		Threshold: 100, WindowSeconds: 30, Recipients: "ops@example.com", State: "closed", Incarnation: "abc"}
	if err := svc.Table(storage.TableCircuits).Insert(ctx, &old); err != nil {
		t.Fatal(err)
	}
	st := storage.New(svc)
	ci, err := st.Circuits.Get(ctx, "orders", "Process")
	if err != nil {
		t.Fatal(err)
	}
	if ci.Threshold != 100 || ci.Window != 30*time.Second || len(ci.Recipients) != 1 {
		t.Fatalf("a row in columns read as %+v", ci.Settings)
	}
	opened := ci
	opened.State, opened.Episode, opened.ChangedAt = circuit.ForcedOpen, 1, time.Now()
	if err := st.Circuits.Transition(ctx, lease.Fence{}, opened, circuit.Flip{Episode: 1, From: circuit.Closed, To: circuit.ForcedOpen, At: opened.ChangedAt, Actor: "demo"}); err != nil {
		t.Fatal(err)
	}
	if err := st.Circuits.Acknowledge(ctx, mustGet(t, st, "orders", "Process")); err != nil {
		t.Fatal(err)
	}
	after := mustGet(t, st, "orders", "Process")
	if after.State != circuit.ForcedOpen || !reflect.DeepEqual(after.Settings, ci.Settings) {
		t.Errorf("after a transition: %s with %+v, want forced-open with %+v", after.State, after.Settings, ci.Settings)
	}
}

func mustGet(t *testing.T, st *storage.Store, app, function string) circuit.Circuit {
	t.Helper()
	c, err := st.Circuits.Get(t.Context(), app, function)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// newSchema is a fresh storage and what brings it to a schema version.
func newSchema(t *testing.T) (*tablestore.Service, func(version int)) {
	t.Helper()
	svc, _ := testenv.Storage(t)
	if err := svc.CreateTable(t.Context(), storage.TableLeases); err != nil {
		t.Fatal(err)
	}
	l, _ := lease.New(storage.New(svc).Leases, lease.Settings{})
	return svc, func(version int) {
		t.Helper()
		r, err := migrate.New(svc, migrations.Steps()[:version], migrate.Settings{Locker: l})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.Apply(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
}

// What a throttle lowered, kept by the last release in the circuit's row
// (release 13 had the actuation row, not this column in it), is read
// from there during a rolling upgrade, survives a replace of the row
// (moved first), and migration 14 moves it for good; once the circuit
// closes and its switch is applied, it is gone from both rows.
func TestWhatAThrottleLoweredMovesToTheActuationRow(t *testing.T) {
	svc, migrateTo := newSchema(t)
	ctx := t.Context()
	migrateTo(13)
	st := storage.New(svc)
	at := time.Date(2026, 12, 1, 9, 30, 0, 0, time.UTC)
	if err := st.Circuits.Create(ctx, circuit.Circuit{AppID: "orders", Function: "Process", State: circuit.Throttled, Episode: 3, ChangedAt: at,
		Settings: circuit.Settings{Threshold: 100, Window: 30 * time.Second, EventHub: "orders", Throttle: circuit.Throttle{Threshold: 20}}}); err != nil {
		t.Fatal(err)
	}
	type release13Lowered struct {
		tablestore.Meta
		Lowered, LoweredKind string
	}
	tbl := svc.Table(storage.TableCircuits)
	const was = `{"AzureFunctionsJobHost__extensions__eventHubs__maxEventBatchSize":"100"}`
	if err := tbl.Merge(ctx, &release13Lowered{Meta: tablestore.Meta{PartitionKey: "orders", RowKey: "c|Process", ETag: "*"}, Lowered: was, LoweredKind: "eventHub"}); err != nil {
		t.Fatal(err)
	}
	lowered := func(how string) {
		t.Helper()
		c := mustGet(t, st, "orders", "Process")
		if v := c.Lowered["AzureFunctionsJobHost__extensions__eventHubs__maxEventBatchSize"]; v == nil || *v != "100" || c.LoweredKind != "eventHub" {
			t.Fatalf("%s: lowered %v (%q); want the batch size of 100 held, for Event Hubs", how, c.Lowered, c.LoweredKind)
		}
	}
	lowered("written by the last release")

	// A replace of the row (a change read afresh) keeps it, in the actuation row.
	if err := st.Circuits.SetState(ctx, lease.Fence{}, mustGet(t, st, "orders", "Process")); err != nil {
		t.Fatal(err)
	}
	lowered("after a replace of the circuit's row")
	migrateTo(len(migrations.Steps()))
	if err := storage.MoveLowered(ctx, svc); err != nil { // again, as after a crash midway
		t.Fatal(err)
	}
	lowered("after migration 14")
	var raw release13Lowered
	if err := tbl.Get(ctx, "orders", "c|Process", &raw); err != nil || raw.Lowered != "" {
		t.Errorf("the circuit's row after migration 14: Lowered %q (%v); want none", raw.Lowered, err)
	}
	if err := tbl.Get(ctx, "orders", "a|Process", &raw); err != nil || raw.Lowered != was {
		t.Errorf("the actuation row after migration 14: Lowered %q (%v); want %s", raw.Lowered, err, was)
	}

	// Setting it is the actuation's: the circuit's version does not move.
	ci := mustGet(t, st, "orders", "Process")
	if err := st.Circuits.SetLowered(ctx, lease.Fence{}, ci, "eventHub", map[string]*string{"AzureFunctionsJobHost__extensions__eventHubs__maxEventBatchSize": ptr("100")}); err != nil {
		t.Fatal(err)
	}
	if now := mustGet(t, st, "orders", "Process"); now.Version != ci.Version {
		t.Errorf("recording what a throttle lowers moved the circuit's version from %q to %q", ci.Version, now.Version)
	}
	closed := mustGet(t, st, "orders", "Process")
	closed.State, closed.Episode, closed.ChangedAt = circuit.Closed, 4, at.Add(time.Minute)
	if err := st.Circuits.Transition(ctx, lease.Fence{}, closed, circuit.Flip{Episode: 4, From: circuit.Throttled, To: circuit.Closed, At: closed.ChangedAt, Actor: "ops"}); err != nil {
		t.Fatal(err)
	}
	if err := st.Circuits.MarkApplied(ctx, lease.Fence{}, mustGet(t, st, "orders", "Process"), at.Add(2*time.Minute)); err != nil {
		t.Fatal(err)
	}
	if c := mustGet(t, st, "orders", "Process"); c.Lowered != nil || c.Pending() {
		t.Errorf("closed and applied: lowered %v, pending %v; want nothing lowered", c.Lowered, c.Pending())
	}
}

func ptr(s string) *string { return &s }
