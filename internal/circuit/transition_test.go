package circuit_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/spoken"
)

var t0 = time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)

func base(state circuit.State) circuit.Circuit {
	return circuit.Circuit{AppID: "orders", Function: "Process", Settings: circuit.Settings{Threshold: 100, Window: 30 * time.Second}, State: state, Episode: 4, ChangedAt: t0, Actuation: circuit.Actuation{AppliedEpisode: 4, AppliedAt: t0, Drift: "was drifting"}}
}

// applied is a circuit whose trigger was switched at t0+d, after the decision at t0.
func applied(c circuit.Circuit, d time.Duration) circuit.Circuit {
	c.AppliedAt = t0.Add(d)
	return c
}

func probed(c circuit.Circuit) circuit.Circuit {
	c.Probe = circuit.Probe{URL: "https://inventory.example.com/health"}
	return c
}

func unapplied(c circuit.Circuit) circuit.Circuit {
	c.AppliedEpisode = 3
	return c
}

// full counts n failures over the whole window ending at now.
func full(n int, now time.Time) circuit.Counts {
	return circuit.Counts{Window: n, Counted: n, Since: now.Add(-30 * time.Second)}
}

func TestEvaluate(t *testing.T) {
	auto := func(c circuit.Circuit) circuit.Circuit {
		c.Policy = circuit.Policy{AutoResume: true, Cooldown: 5 * time.Minute}
		return c
	}
	tests := []struct {
		name       string
		c          circuit.Circuit
		n          circuit.Counts
		now        time.Time
		wantState  circuit.State
		wantReason string // substring; "" means no transition
	}{
		{"closed at the threshold stays closed", base(circuit.Closed), full(100, t0.Add(time.Hour)), t0.Add(time.Hour), circuit.Closed, ""},
		{"closed one past the threshold trips", base(circuit.Closed), full(101, t0.Add(time.Hour)), t0.Add(time.Hour), circuit.Open, "101 failures in 30s (threshold 100)"},
		{"closed counts only since its last change", base(circuit.Closed), circuit.Counts{Window: 500, Counted: 100, Since: t0}, t0.Add(10 * time.Second), circuit.Closed, ""},
		{"a trip after a resume says since when", base(circuit.Closed), circuit.Counts{Window: 500, Counted: 101, Since: t0}, t0.Add(10 * time.Second), circuit.Open, "101 failures since 09:00:00 UTC, within 30s (threshold 100)"},
		{"open without auto-resume stays open", base(circuit.Open), circuit.Counts{}, t0.Add(24 * time.Hour), circuit.Open, ""},
		{"auto-resume a nanosecond before the cooldown", auto(base(circuit.Open)), circuit.Counts{}, auto(base(circuit.Open)).TrialAt().Add(-time.Nanosecond), circuit.Open, ""},
		{"auto-resume at the cooldown goes half-open", auto(base(circuit.Open)), circuit.Counts{Window: 3}, auto(base(circuit.Open)).TrialAt(), circuit.HalfOpen, "cooldown of "},
		{"with a health probe, the cooldown's end leaves the trial to the probe", probed(auto(base(circuit.Open))), circuit.Counts{}, auto(base(circuit.Open)).TrialAt().Add(time.Hour), circuit.Open, ""},
		{"the cooldown runs from when the trigger went off", auto(applied(base(circuit.Open), 20*time.Second)), circuit.Counts{}, t0.Add(5 * time.Minute), circuit.Open, ""},
		{"no cooldown while the trigger is not yet off", auto(unapplied(base(circuit.Open))), circuit.Counts{}, t0.Add(time.Hour), circuit.Open, ""},
		{"half-open trips at the first new failure", base(circuit.HalfOpen), circuit.Counts{Window: 40, Counted: 1, Since: t0}, t0.Add(time.Second), circuit.Open, "failures resumed during the trial (1 since the trigger went on at 09:00:00 UTC)"},
		{"half-open quiet a nanosecond short of a window", base(circuit.HalfOpen), circuit.Counts{Window: 40, Since: t0}, t0.Add(30*time.Second - time.Nanosecond), circuit.HalfOpen, ""},
		{"half-open quiet a whole window closes", base(circuit.HalfOpen), circuit.Counts{Since: t0}, t0.Add(30 * time.Second), circuit.Closed, "no failure for a whole window (30s) after the trigger went on: recovered"},
		// The settings change took 20 s to apply: the trial lasts a whole
		// window from then, not from the decision.
		{"a trial whose apply took 20s is not over 30s after the decision", applied(base(circuit.HalfOpen), 20*time.Second), circuit.Counts{Since: t0.Add(20 * time.Second)}, t0.Add(30 * time.Second), circuit.HalfOpen, ""},
		{"a trial whose apply took 20s closes a window after the apply", applied(base(circuit.HalfOpen), 20*time.Second), circuit.Counts{Since: t0.Add(20 * time.Second)}, t0.Add(50 * time.Second), circuit.Closed, "recovered"},
		{"a trial whose trigger is not yet on waits", unapplied(base(circuit.HalfOpen)), circuit.Counts{}, t0.Add(time.Hour), circuit.HalfOpen, ""},
		{"forced-open ignores counts", base(circuit.ForcedOpen), circuit.Counts{Window: 1000, Counted: 1000}, t0.Add(time.Hour), circuit.ForcedOpen, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, f := circuit.Evaluate(tt.c, tt.n, tt.now)
			if tt.wantReason == "" {
				if f != nil || got.State != tt.c.State || got.Episode != tt.c.Episode {
					t.Fatalf("transitioned to %s (flip %+v), want no change", got.State, f)
				}
				return
			}
			if f == nil {
				t.Fatalf("no transition, want %s", tt.wantState)
			}
			want := circuit.Flip{Episode: 5, From: tt.c.State, To: tt.wantState, At: tt.now, Actor: circuit.EvaluatorActor,
				Count: tt.n.Counted, Calls: tt.n.Counted + tt.n.Successes, Since: tt.n.Since, Threshold: 100, Window: 30 * time.Second, Reason: f.Reason}
			if *f != want {
				t.Errorf("flip = %+v, want %+v", *f, want)
			}
			if !strings.Contains(f.Reason, tt.wantReason) {
				t.Errorf("reason %q does not say %q", f.Reason, tt.wantReason)
			}
			if got.State != tt.wantState || got.Episode != 5 || !got.ChangedAt.Equal(tt.now) || got.Reason != f.Reason {
				t.Errorf("circuit after = %s episode %d changed %v reason %q", got.State, got.Episode, got.ChangedAt, got.Reason)
			}
			if !got.Pending() || got.Drift != "" {
				t.Errorf("a transition must leave the trigger pending and clear drift: pending %v drift %q", got.Pending(), got.Drift)
			}
		})
	}
}

func TestOperatorActions(t *testing.T) {
	now := t0.Add(time.Minute)
	tripped, f, err := circuit.Trip(base(circuit.Closed), "olivia", "", circuit.Counts{Counted: 12}, now)
	if err != nil {
		t.Fatal(err)
	}
	if tripped.State != circuit.ForcedOpen || f.Actor != "olivia" || f.Reason != "tripped by hand" || f.Count != 12 || f.Episode != 5 {
		t.Errorf("trip: %s %+v", tripped.State, f)
	}
	if _, _, err := circuit.Trip(tripped, "olivia", "again", circuit.Counts{}, now); !errors.Is(err, circuit.ErrAlreadyOpen) {
		t.Errorf("second trip: %v, want ErrAlreadyOpen", err)
	}
	for _, from := range []circuit.State{circuit.Open, circuit.HalfOpen, circuit.ForcedOpen} {
		resumed, f, err := circuit.Resume(base(from), "victor", "", circuit.Counts{}, now)
		if err != nil || resumed.State != circuit.Closed || f.From != from || f.Reason != "resumed by victor" {
			t.Errorf("resume from %s: %s %+v %v", from, resumed.State, f, err)
		}
	}
	if _, _, err := circuit.Resume(base(circuit.Closed), "victor", "", circuit.Counts{}, now); !errors.Is(err, circuit.ErrNotOpen) {
		t.Errorf("resume of a closed circuit: %v, want ErrNotOpen", err)
	}
}

// CountsFrom is where counting starts: never before the last change of a
// closed circuit, and from the apply for a half-open trial.
func TestCountsFrom(t *testing.T) {
	now := t0.Add(10 * time.Second)
	tests := []struct {
		name string
		c    circuit.Circuit
		want time.Time
	}{
		{"closed long ago counts its window", base(circuit.Closed), t0.Add(time.Hour - 30*time.Second)},
		{"closed 10s ago counts since the change", base(circuit.Closed), t0},
		{"half-open counts from the apply", applied(base(circuit.HalfOpen), 4*time.Second), t0.Add(4 * time.Second)},
		{"half-open before its apply counts nothing yet", unapplied(base(circuit.HalfOpen)), now},
		{"open counts its window, for the pages", base(circuit.Open), now.Add(-30 * time.Second)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			at := now
			if tt.name == "closed long ago counts its window" {
				at = t0.Add(time.Hour)
			}
			if got := tt.c.CountsFrom(at); !got.Equal(tt.want) {
				t.Errorf("CountsFrom = %v, want %v", got, tt.want)
			}
		})
	}
}

// Links act on exactly what they name.
func TestCheckLink(t *testing.T) {
	open := base(circuit.Open)
	open.Incarnation, open.Recipients = "abc", []string{"ops@example.com"}
	claim := circuit.LinkClaim{AppID: "orders", Function: "Process", Episode: 4, Incarnation: "abc", Recipient: "Ops@Example.com"}
	if err := circuit.CheckLink(open, circuit.App{}, claim); err != nil {
		t.Errorf("a current link: %v", err)
	}
	later := open
	later.Episode = 6
	forced := open
	forced.State = circuit.ForcedOpen
	removed := open
	removed.Recipients = []string{"someone-else@example.com"}
	recreated := open
	recreated.Incarnation = "def"
	closed := open
	closed.State = circuit.Closed
	for name, tc := range map[string]struct {
		c    circuit.Circuit
		want error
	}{
		"a later episode":       {later, circuit.ErrEpisodeEnded},
		"forced open by hand":   {forced, circuit.ErrForcedByHand},
		"recipient removed":     {removed, circuit.ErrNotRecipient},
		"deleted and recreated": {recreated, circuit.ErrRecreated},
		"closed meanwhile":      {closed, circuit.ErrNotLinkAction},
	} {
		if err := circuit.CheckLink(tc.c, circuit.App{}, claim); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", name, err, tc.want)
		}
	}
}

func TestValidateNamesEveryBadField(t *testing.T) {
	linux := &circuit.App{ID: "orders", Linux: true}
	c := circuit.Circuit{AppID: "orders", Function: "process-orders", Settings: circuit.Settings{Threshold: 0, Window: -time.Second, Recipients: []string{"ops@example.com", "not an address"}, Policy: circuit.Policy{AutoResume: true}}}
	err := c.Validate(linux)
	var v circuit.ValidationError
	if !errors.As(err, &v) {
		t.Fatalf("got %v, want a ValidationError", err)
	}
	for field, want := range map[string]string{
		"function":   "Linux plans reject app setting names with '-'",
		"threshold":  "at least 1",
		"window":     "longer than zero",
		"recipients": `"not an address" is not an e-mail address`,
		"cooldown":   "at least 1s",
	} {
		if msg := v.For(field); !strings.Contains(msg, want) {
			t.Errorf("%s: %q, want it to say %q", field, msg, want)
		}
	}
	if err := (circuit.Circuit{AppID: "x", Function: "F", Settings: circuit.Settings{Threshold: 1, Window: time.Second}}).Validate(nil); !strings.Contains(err.Error(), `no registered function app "x"`) {
		t.Errorf("unknown app: %v", err)
	}
	good := circuit.Circuit{AppID: "orders", Function: "process-orders", Settings: circuit.Settings{Threshold: 100, Window: 30 * time.Second, Recipients: []string{"ops@example.com"}}}
	if err := good.Validate(&circuit.App{ID: "orders"}); err != nil {
		t.Errorf("a dash is fine on Windows: %v", err)
	}
	if err := (circuit.Circuit{AppID: "orders", Function: "F", Settings: circuit.Settings{Threshold: 1, Window: 1500 * time.Millisecond}}).Validate(linux); err == nil {
		t.Error("a window of 1.5s was accepted")
	}
}

func TestShortDuration(t *testing.T) {
	tests := map[time.Duration]string{
		30 * time.Second: "30s", time.Minute: "1m", 5 * time.Minute: "5m", 90 * time.Second: "1m30s",
		time.Hour: "1h", 90 * time.Minute: "1h30m", 2*time.Hour + 5*time.Second: "2h0m5s", 1500 * time.Millisecond: "1.5s",
	}
	for d, want := range tests {
		if got := spoken.Duration(d); got != want {
			t.Errorf("ShortDuration(%v) = %q, want %q", d, got, want)
		}
	}
}

// Rows written before Fusebox recorded when a trigger was switched have no
// AppliedAt: a trial then runs from the decision, not from the year 1.
func TestATrialWithoutAnApplyTimeRunsFromTheDecision(t *testing.T) {
	c := base(circuit.HalfOpen)
	c.AppliedAt = time.Time{}
	if got, f := circuit.Evaluate(c, circuit.Counts{Since: t0}, t0.Add(29*time.Second)); f != nil {
		t.Errorf("a trial 29 s into a 30 s window ended: %s, %q", got.State, f.Reason)
	}
	if _, f := circuit.Evaluate(c, circuit.Counts{Since: t0}, t0.Add(30*time.Second)); f == nil || f.To != circuit.Closed {
		t.Errorf("a quiet trial of a whole window did not close: %+v", f)
	}
}

// A ratio rule weighs failures against all calls, and never below its
// minimum of calls.
func TestARatioRuleAtItsBoundaries(t *testing.T) {
	c := base(circuit.Closed)
	c.Rule = circuit.Rule{Ratio: 0.5, MinCalls: 200}
	now := t0.Add(time.Hour)
	since := now.Add(-30 * time.Second)
	tests := []struct {
		name                string
		failures, successes int
		trips               bool
	}{
		{"one call short of the minimum, all failed", 199, 0, false},
		{"at the minimum, exactly half failed", 100, 100, true},
		{"at the minimum, one failure short of half", 99, 101, false},
		{"many calls, few failures (a count rule of 100 would trip)", 150, 1690, false},
		{"62 % of 1,840 calls", 1141, 699, true},
		{"no calls", 0, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := circuit.Counts{Counted: tt.failures, Successes: tt.successes, Since: since}
			got, f := circuit.Evaluate(c, n, now)
			if (f != nil) != tt.trips {
				t.Fatalf("tripped %v, want %v (state %s)", f != nil, tt.trips, got.State)
			}
			if f != nil && (f.Count != tt.failures || f.Calls != tt.failures+tt.successes) {
				t.Errorf("flip counts %d of %d calls, want %d of %d", f.Count, f.Calls, tt.failures, tt.failures+tt.successes)
			}
		})
	}
	_, f := circuit.Evaluate(c, circuit.Counts{Counted: 1141, Successes: 699, Since: since}, now)
	if want := "62 % of 1,840 calls failed in 30s (rule: ≥ 50 % once 200 calls)"; f == nil || f.Reason != want {
		t.Errorf("reason %q, want %q", f.Reason, want)
	}
	if got, want := c.RuleText(), "50 % of calls fail within 30s, once 200 calls happened in it"; got != want {
		t.Errorf("RuleText = %q, want %q", got, want)
	}
}

func TestRatioRulesAreValidated(t *testing.T) {
	app := &circuit.App{ID: "orders"}
	for _, tc := range []struct {
		rule  circuit.Rule
		field string
	}{
		{circuit.Rule{Ratio: 1.2, MinCalls: 10}, "ratio"},
		{circuit.Rule{Ratio: -0.1, MinCalls: 10}, "ratio"},
		{circuit.Rule{Ratio: 0.5, MinCalls: 0}, "min_calls"},
		{circuit.Rule{MinCalls: 10}, "ratio"},
	} {
		c := circuit.Circuit{AppID: "orders", Function: "F", Settings: circuit.Settings{Threshold: 1, Window: time.Minute, Rule: tc.rule}}
		var v circuit.ValidationError
		if err := c.Validate(app); !errors.As(err, &v) || v.For(tc.field) == "" {
			t.Errorf("%+v: got %v, want a message for %s", tc.rule, err, tc.field)
		}
	}
	ok := circuit.Circuit{AppID: "orders", Function: "F", Settings: circuit.Settings{Threshold: 1, Window: time.Minute, Rule: circuit.Rule{Ratio: 1, MinCalls: 1}}}
	if err := ok.Validate(app); err != nil {
		t.Errorf("100 %% once 1 call: %v", err)
	}
}

// The cooldown doubles with each trip in a row, up to its cap, spread by
// at most ±10 %.
func TestCooldownsGrowWithEachTripInARow(t *testing.T) {
	p := circuit.Policy{AutoResume: true, Cooldown: time.Minute, MaxCooldown: 10 * time.Minute}
	for streak, want := range map[int]time.Duration{1: time.Minute, 2: 2 * time.Minute, 3: 4 * time.Minute, 4: 8 * time.Minute, 5: 10 * time.Minute, 40: 10 * time.Minute} {
		if got := p.CooldownFor(streak, 0); got != want {
			t.Errorf("trip %d in a row: %s, want %s", streak, got, want)
		}
	}
	if lo, hi := p.CooldownFor(3, -1), p.CooldownFor(3, 1); lo != 216*time.Second || hi != 264*time.Second {
		t.Errorf("jitter bounds of 4m: %s and %s, want 3m36s and 4m24s", lo, hi)
	}
	if got := (circuit.Policy{Cooldown: time.Minute}).CooldownFor(10, 0); got != 16*time.Minute {
		t.Errorf("default cap: %s, want 16 × the cooldown", got)
	}
	// A circuit's own jitter is fixed, and within the bounds.
	c := base(circuit.Open)
	c.Policy, c.Streak = p, 3
	if first, again := c.Cooldown(), c.Cooldown(); first != again || first < 216*time.Second || first > 264*time.Second {
		t.Errorf("circuit cooldown %s, want a fixed value in [3m36s, 4m24s]", c.Cooldown())
	}
	if _, f := circuit.Evaluate(c, circuit.Counts{}, c.SwitchedAt().Add(216*time.Second-time.Nanosecond)); f != nil {
		t.Errorf("the third trip's trial came before 90 %% of 4m: %q", f.Reason)
	}
	if _, f := circuit.Evaluate(c, circuit.Counts{}, c.SwitchedAt().Add(264*time.Second)); f == nil || !strings.Contains(f.Reason, "trip 3 in a row") {
		t.Errorf("the third trip's trial did not come by 110 %% of 4m: %+v", f)
	}
}

// A trip within a window of closing continues the streak; one after a
// whole healthy window starts it again; a failed trial adds to it.
func TestTheStreakOfTrips(t *testing.T) {
	closed := base(circuit.Closed)
	closed.Streak = 2
	soon, _ := circuit.Evaluate(closed, circuit.Counts{Counted: 101, Since: t0}, t0.Add(10*time.Second))
	later, _ := circuit.Evaluate(closed, circuit.Counts{Counted: 101, Since: t0}, t0.Add(30*time.Second))
	if soon.Streak != 3 || later.Streak != 1 {
		t.Errorf("streak after a trip 10 s after closing: %d (want 3); a whole window after: %d (want 1)", soon.Streak, later.Streak)
	}
	trial := base(circuit.HalfOpen)
	trial.Streak = 3
	if failed, f := circuit.Evaluate(trial, circuit.Counts{Counted: 1, Since: t0}, t0.Add(time.Second)); f == nil || failed.Streak != 4 {
		t.Errorf("a failed trial: streak %d, want 4", failed.Streak)
	}
}

// A ratio circuit's trial passes only after a whole window with enough
// calls under the rule.
func TestARatioTrialNeedsItsCalls(t *testing.T) {
	c := base(circuit.HalfOpen)
	c.Rule = circuit.Rule{Ratio: 0.5, MinCalls: 100}
	end := t0.Add(30 * time.Second)
	if _, f := circuit.Evaluate(c, circuit.Counts{Counted: 10, Successes: 80, Since: t0}, end); f != nil {
		t.Errorf("90 calls, fewer than 100, ended the trial: %q", f.Reason)
	}
	if got, f := circuit.Evaluate(c, circuit.Counts{Counted: 10, Successes: 90, Since: t0}, end); f == nil || got.State != circuit.Closed {
		t.Errorf("100 calls with 10 %% failed over a whole window did not close: %+v", f)
	}
	if got, f := circuit.Evaluate(c, circuit.Counts{Counted: 60, Successes: 40, Since: t0}, t0.Add(5*time.Second)); f == nil || got.State != circuit.Open {
		t.Errorf("60 of 100 calls failed during the trial did not reopen: %+v", f)
	}
	if _, f := circuit.Evaluate(c, circuit.Counts{Counted: 3, Successes: 40, Since: t0}, t0.Add(5*time.Second)); f != nil {
		t.Errorf("a few failures under the rule ended a ratio trial: %q", f.Reason)
	}
}

// The NoSuccess rule trips a circuit whose calls all fail, however few:
// three failures and no success in a whole window, where the count rule
// (more than 100) never would. Part of a window proves nothing, and one
// success anywhere in it means the function can still work.
func TestTheNoSuccessRule(t *testing.T) {
	now := t0.Add(time.Hour)
	closedFor := func(d time.Duration, noSuccess bool) circuit.Circuit {
		c := base(circuit.Closed)
		c.ChangedAt, c.Rule.NoSuccess = now.Add(-d), noSuccess
		return c
	}
	row := func(id string, c circuit.Circuit, ago time.Duration, failures, successes int) circuit.FailureRow {
		return circuit.FailureRow{ID: id, Circuit: c.ID(), Second: now.Add(-ago), Count: failures, Successes: successes}
	}
	tests := []struct {
		name  string
		c     circuit.Circuit
		rows  func(circuit.Circuit) []circuit.FailureRow
		trips bool
	}{
		{"three failures, no success, a whole window", closedFor(time.Hour, true),
			func(c circuit.Circuit) []circuit.FailureRow {
				return []circuit.FailureRow{row("a", c, 25*time.Second, 1, 0), row("b", c, 5*time.Second, 2, 0)}
			}, true},
		{"the same without the rule", closedFor(time.Hour, false),
			func(c circuit.Circuit) []circuit.FailureRow {
				return []circuit.FailureRow{row("a", c, 25*time.Second, 1, 0), row("b", c, 5*time.Second, 2, 0)}
			}, false},
		{"one success in the window", closedFor(time.Hour, true),
			func(c circuit.Circuit) []circuit.FailureRow {
				return []circuit.FailureRow{row("a", c, 25*time.Second, 3, 0), row("b", c, 29*time.Second, 0, 1)}
			}, false},
		{"resumed 10 s ago: not yet a whole window", closedFor(10*time.Second, true),
			func(c circuit.Circuit) []circuit.FailureRow {
				return []circuit.FailureRow{row("a", c, 5*time.Second, 3, 0)}
			}, false},
		{"no failure at all", closedFor(time.Hour, true),
			func(circuit.Circuit) []circuit.FailureRow { return nil }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := circuit.CountRows(tt.rows(tt.c), []circuit.Circuit{tt.c}, now)[tt.c.ID()]
			_, f := circuit.Evaluate(tt.c, n, now)
			if (f != nil) != tt.trips {
				t.Fatalf("tripped %v, want %v (counts %+v)", f != nil, tt.trips, n)
			}
			if f != nil && f.Reason != "3 failures and no successful call in 30s (rule: no success for a whole window)" {
				t.Errorf("reason %q", f.Reason)
			}
		})
	}
	c := closedFor(time.Hour, true)
	if got, want := c.RuleText(), "more than 100 failures in 30s, or when calls fail and none succeeds for a whole 30s"; got != want {
		t.Errorf("RuleText = %q, want %q", got, want)
	}
}

// With a quorum, failures trip only when enough distinct instances report
// them: many failures from one sick instance do not; rows that name no
// instance count toward none; the reason says how many instances.
func TestAQuorumOfInstances(t *testing.T) {
	now := time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)
	c := circuit.Circuit{AppID: "orders", Function: "Import", Settings: circuit.Settings{Threshold: 10, Window: 30 * time.Second, Rule: circuit.Rule{MinInstances: 2}}, State: circuit.Closed, ChangedAt: now.Add(-time.Hour)}
	row := func(id, source string, named bool, n int) circuit.FailureRow {
		return circuit.FailureRow{ID: id, Circuit: c.ID(), Second: now.Add(-5 * time.Second), Count: n, Source: source, Named: named}
	}
	for _, tc := range []struct {
		name   string
		rows   []circuit.FailureRow
		trips  bool
		reason string
	}{
		{"one sick instance", []circuit.FailureRow{row("a", "vm-1", true, 500)}, false, ""},
		{"one instance and unnamed requests", []circuit.FailureRow{row("a", "vm-1", true, 50), row("b", "api.1f.7", false, 50), row("c", "api.1f.8", false, 50)}, false, ""},
		{"two instances", []circuit.FailureRow{row("a", "vm-1", true, 6), row("b", "vm-2", true, 6)}, true, "12 failures in 30s (threshold 10) from 2 instances (quorum 2)"},
		{"two instances, too few failures", []circuit.FailureRow{row("a", "vm-1", true, 5), row("b", "vm-2", true, 5)}, false, ""},
		{"an instance with only successes does not count", []circuit.FailureRow{row("a", "vm-1", true, 20), {ID: "b", Circuit: c.ID(), Second: now.Add(-time.Second), Successes: 9, Source: "vm-2", Named: true}}, false, ""},
	} {
		n := circuit.CountRows(tc.rows, []circuit.Circuit{c}, now)[c.ID()]
		_, f := circuit.Evaluate(c, n, now)
		if (f != nil) != tc.trips || (f != nil && f.Reason != tc.reason) {
			t.Errorf("%s: tripped %v (%+v), want %v %q", tc.name, f != nil, f, tc.trips, tc.reason)
		}
	}
	if got := c.RuleText(); got != "more than 10 failures in 30s, from at least 2 instances" {
		t.Errorf("RuleText = %q", got)
	}
	if err := (circuit.Circuit{AppID: "orders", Function: "Import", Settings: circuit.Settings{Threshold: 1, Window: time.Minute, Rule: circuit.Rule{MinInstances: -1}}}).Validate(nil); err == nil {
		t.Error("a negative quorum was accepted")
	}
}
