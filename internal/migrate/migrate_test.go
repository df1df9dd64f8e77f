package migrate_test

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fusebox/fusebox/internal/lease"
	"github.com/fusebox/fusebox/internal/migrate"
	"github.com/fusebox/fusebox/internal/storage"
	"github.com/fusebox/fusebox/internal/tablestore"
	"github.com/fusebox/fusebox/internal/testenv"
)

func counting(calls *[3]atomic.Int32, version int) func(context.Context, *tablestore.Service) error {
	return func(ctx context.Context, svc *tablestore.Service) error {
		calls[version-1].Add(1)
		return svc.CreateTable(ctx, "Step"+string(rune('0'+version)))
	}
}

// runner builds a Runner for one instance, with its own Locker.
func runner(t *testing.T, svc *tablestore.Service, steps []migrate.Step, holder string, logger *slog.Logger) *migrate.Runner {
	t.Helper()
	if err := svc.CreateTable(t.Context(), storage.TableLeases); err != nil {
		t.Fatal(err)
	}
	l, err := lease.New(storage.New(svc).Leases, lease.Settings{Identity: holder,
		Duration: 3 * time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: 20 * time.Millisecond, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	r, err := migrate.New(svc, steps, migrate.Settings{Locker: l, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestApplyRunsEachStepOnceAndRecordsTheVersion(t *testing.T) {
	svc, _ := testenv.Storage(t)
	var calls [3]atomic.Int32
	steps := []migrate.Step{
		{Version: 1, Name: "one", Apply: counting(&calls, 1)},
		{Version: 2, Name: "two", Apply: counting(&calls, 2)},
	}
	r := runner(t, svc, steps, "a", nil)
	applied, err := r.Apply(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(applied, []int{1, 2}) {
		t.Errorf("first run applied %v, want [1 2]", applied)
	}
	applied, err = r.Apply(t.Context())
	if err != nil || len(applied) != 0 {
		t.Errorf("second run applied %v (err %v), want nothing", applied, err)
	}
	if v, err := r.Current(t.Context()); err != nil || v != 2 {
		t.Errorf("Current = %d (err %v), want 2", v, err)
	}

	// A release that appends a step applies only the new one.
	steps = append(steps, migrate.Step{Version: 3, Name: "three", Apply: counting(&calls, 3)})
	r3 := runner(t, svc, steps, "a", nil)
	if applied, err := r3.Apply(t.Context()); err != nil || !slices.Equal(applied, []int{3}) {
		t.Errorf("after adding step 3, applied %v (err %v), want [3]", applied, err)
	}
	for i := range calls {
		if n := calls[i].Load(); n != 1 {
			t.Errorf("step %d ran %d times, want 1", i+1, n)
		}
	}
}

// signalHandler closes ch the first time a record with msg is logged.
type signalHandler struct {
	msg  string
	once *sync.Once
	ch   chan struct{}
}

func (h signalHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h signalHandler) Handle(_ context.Context, r slog.Record) error {
	if r.Message == h.msg {
		h.once.Do(func() { close(h.ch) })
	}
	return nil
}
func (h signalHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h signalHandler) WithGroup(string) slog.Handler      { return h }

func TestInstancesStartingTogetherApplyEachStepOnce(t *testing.T) {
	svc, _ := testenv.Storage(t)
	var calls [3]atomic.Int32
	othersWaiting := make(chan struct{})
	steps := []migrate.Step{
		{Version: 1, Name: "slow", Apply: func(ctx context.Context, s *tablestore.Service) error {
			// Hold the claim until another instance has seen it and is waiting,
			// so the test really exercises contention.
			select {
			case <-othersWaiting:
			case <-ctx.Done():
				return ctx.Err()
			}
			return counting(&calls, 1)(ctx, s)
		}},
		{Version: 2, Name: "two", Apply: counting(&calls, 2)},
		{Version: 3, Name: "three", Apply: counting(&calls, 3)},
	}
	logger := slog.New(signalHandler{msg: "waiting for another instance to finish migrating", once: &sync.Once{}, ch: othersWaiting})

	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	results := make([][]int, 3)
	errs := make([]error, 3)
	for i := range 3 {
		r := runner(t, svc, steps, string(rune('a'+i)), logger)
		wg.Go(func() { results[i], errs[i] = r.Apply(ctx) })
	}
	wg.Wait()

	var all []int
	for i := range 3 {
		if errs[i] != nil {
			t.Errorf("instance %d: %v", i, errs[i])
		}
		all = append(all, results[i]...)
	}
	slices.Sort(all)
	if !slices.Equal(all, []int{1, 2, 3}) {
		t.Errorf("instances applied %v between them, want each of 1, 2, 3 once", all)
	}
	for i := range calls {
		if n := calls[i].Load(); n != 1 {
			t.Errorf("step %d ran %d times, want 1", i+1, n)
		}
	}
}

func TestFailedStepStopsAndIsRetriedOnNextStart(t *testing.T) {
	svc, _ := testenv.Storage(t)
	var calls [3]atomic.Int32
	fail := true
	steps := []migrate.Step{
		{Version: 1, Name: "one", Apply: counting(&calls, 1)},
		{Version: 2, Name: "flaky", Apply: func(ctx context.Context, s *tablestore.Service) error {
			if fail {
				return errors.New("disk on fire")
			}
			return counting(&calls, 2)(ctx, s)
		}},
	}
	r := runner(t, svc, steps, "a", nil)
	applied, err := r.Apply(t.Context())
	if err == nil {
		t.Fatal("a failing step did not stop Apply")
	}
	for _, want := range []string{"step 2 (flaky)", "disk on fire", "retried on the next start"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if !slices.Equal(applied, []int{1}) {
		t.Errorf("applied %v before failing, want [1]", applied)
	}
	if v, _ := r.Current(t.Context()); v != 1 {
		t.Errorf("version after failure = %d, want 1", v)
	}

	fail = false
	r2 := runner(t, svc, steps, "b", nil)
	applied, err = r2.Apply(t.Context())
	if err != nil || !slices.Equal(applied, []int{2}) {
		t.Errorf("next start applied %v (err %v), want [2]", applied, err)
	}
	if n := calls[0].Load(); n != 1 {
		t.Errorf("step 1 ran %d times, want 1", n)
	}
}

func TestStorageAheadOfBuildIsRefused(t *testing.T) {
	svc, _ := testenv.Storage(t)
	var calls [3]atomic.Int32
	two := []migrate.Step{{Version: 1, Name: "one", Apply: counting(&calls, 1)}, {Version: 2, Name: "two", Apply: counting(&calls, 2)}}
	r := runner(t, svc, two, "a", nil)
	if _, err := r.Apply(t.Context()); err != nil {
		t.Fatal(err)
	}
	old := runner(t, svc, two[:1], "b", nil)
	if _, err := old.Apply(t.Context()); err == nil || !strings.Contains(err.Error(), "newer Fusebox") {
		t.Errorf("an older build migrating newer storage: got %v", err)
	}
}

func TestNewRejectsBadStepLists(t *testing.T) {
	svc, _ := testenv.Storage(t)
	noop := func(context.Context, *tablestore.Service) error { return nil }
	tests := []struct {
		name  string
		steps []migrate.Step
	}{
		{"gap", []migrate.Step{{Version: 1, Name: "a", Apply: noop}, {Version: 3, Name: "c", Apply: noop}}},
		{"starts at 0", []migrate.Step{{Version: 0, Name: "a", Apply: noop}}},
		{"no name", []migrate.Step{{Version: 1, Apply: noop}}},
		{"no func", []migrate.Step{{Version: 1, Name: "a"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, _ := lease.New(storage.New(svc).Leases, lease.Settings{})
			if _, err := migrate.New(svc, tt.steps, migrate.Settings{Locker: l}); err == nil {
				t.Error("accepted")
			}
		})
	}
}
