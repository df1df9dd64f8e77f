package downstream_test

import (
	"strings"
	"testing"
	"time"

	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/downstream"
)

const rule = "/subscriptions/7e2c1f4a-5b6d-4e8f-9a0b-1c2d3e4f5a6b/resourceGroups/rg-data/providers/microsoft.insights/metricAlerts/db-dtu"

var t0 = time.Date(2026, 12, 7, 2, 0, 0, 0, time.UTC)

func inventory() downstream.Downstream {
	return downstream.Downstream{Name: "inventory-db", Members: []string{"orders/Process", "orders/Take", "shipping/Reserve"}, Quorum: 2,
		Rules: []downstream.Rule{{ID: rule}}, Probe: downstream.Probe{URL: "https://inventory.example.com/health"}}.WithDefaults()
}

// What a form or a stored row may say is checked field by field.
func TestADownstreamIsCheckedByField(t *testing.T) {
	if err := inventory().Check(false); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		field string
		edit  func(*downstream.Downstream)
	}{
		{"name", func(d *downstream.Downstream) { d.Name = "Inventory DB" }},
		{"members", func(d *downstream.Downstream) { d.Members = nil }},
		{"members", func(d *downstream.Downstream) { d.Members = append(d.Members, "orders/Process") }},
		{"members", func(d *downstream.Downstream) { d.Members = []string{"orders"} }},
		{"members", func(d *downstream.Downstream) { d.Members = make([]string, downstream.MaxMembers+1) }},
		{"quorum", func(d *downstream.Downstream) { d.Quorum = 3 }}, // two apps
		{"quorum", func(d *downstream.Downstream) { d.Quorum = -1 }},
		{"alert_rules", func(d *downstream.Downstream) { d.Rules = []downstream.Rule{{ID: "db-dtu", Action: "trip"}} }},
		{"alert_rules", func(d *downstream.Downstream) { d.Rules = []downstream.Rule{{ID: rule, Action: "reboot"}} }},
		{"probe_url", func(d *downstream.Downstream) { d.Probe.URL = "http://inventory.example.com/health" }},
		{"probe_url", func(d *downstream.Downstream) { d.Probe.URL = "https://user:pw@inventory.example.com/health" }},
		{"probe_good", func(d *downstream.Downstream) { d.Probe.Good = 0 }},
		{"probe_every", func(d *downstream.Downstream) { d.Probe.Every = time.Millisecond }},
	} {
		d := inventory()
		tc.edit(&d)
		err := d.Check(false)
		v, ok := err.(downstream.ValidationError)
		if !ok || v[tc.field] == "" {
			t.Errorf("%s: got %v, want a problem with %s", tc.field, err, tc.field)
		}
	}
	d := inventory()
	d.Probe.URL = "http://127.0.0.1:7072/health"
	if err := d.Check(true); err != nil {
		t.Errorf("a loopback probe in development: %v", err)
	}
	if err := d.Check(false); err == nil {
		t.Error("an http probe outside development was taken")
	}
}

// A trip is a new episode; "Resolved" waits for the probe, whose good
// answers in a row (not in all) start the trial; a trial settles from its
// members: closed when all closed, open again when one failed.
func TestAnEpisodeFromTripToClosed(t *testing.T) {
	d := inventory()
	d, err := downstream.Trip(d, "Azure Monitor", "alert rule db-dtu fired", t0)
	if err != nil || d.State != downstream.Open || d.Episode != 1 {
		t.Fatalf("trip: %v %s %d", err, d.State, d.Episode)
	}
	if _, err := downstream.Trip(d, "bob", "again", t0); err != downstream.ErrAlreadyOff {
		t.Errorf("a second trip: %v, want ErrAlreadyOff", err)
	}
	d, err = downstream.Resolved(d, "Azure Monitor", "alert rule db-dtu resolved", t0.Add(time.Minute))
	if err != nil || d.State != downstream.Waiting {
		t.Fatalf("resolved with a probe: %v %s, want waiting", err, d.State)
	}
	at := t0.Add(time.Minute)
	answer := func(good bool) bool {
		at = at.Add(10 * time.Second)
		if !d.ProbeDue(at) {
			t.Fatalf("the probe is not due %s after its last answer", d.Probe.Every)
		}
		var tried bool
		d, tried = downstream.Heard(d, downstream.Answer{At: at, Good: good})
		return tried
	}
	for i, good := range []bool{true, true, false, true, true} {
		if answer(good) {
			t.Fatalf("tried after answer %d: two good, a bad, two good are not 3 in a row", i+1)
		}
	}
	if !answer(true) || d.State != downstream.Trial || d.Episode != 1 {
		t.Fatalf("the third good answer in a row: %s episode %d, want a trial of episode 1", d.State, d.Episode)
	}
	if d.ProbeDue(at.Add(time.Hour)) {
		t.Error("the probe is due while its members are on trial")
	}
	mark := d.Mark()
	member := func(id string, s circuit.State) circuit.Circuit {
		app, fn, _ := circuit.SplitID(id)
		return circuit.Circuit{AppID: app, Function: fn, State: s, Downstream: mark}
	}
	trial := []circuit.Circuit{member("orders/Process", circuit.Closed), member("orders/Take", circuit.HalfOpen), member("shipping/Reserve", circuit.Closed)}
	if _, changed := downstream.Settle(d, trial, at); changed {
		t.Error("settled while a member is still half-open")
	}
	notYet := trial[1]
	notYet.State = circuit.ForcedOpen
	if _, changed := downstream.Settle(d, []circuit.Circuit{trial[0], notYet, trial[2]}, at); changed {
		t.Error("settled while the trial had not reached a member yet (still off by the downstream): it has not failed")
	}
	trial[1].State = circuit.Open
	if failed, changed := downstream.Settle(d, trial, at); !changed || failed.State != downstream.Open || !strings.Contains(failed.Reason, "orders/Take") {
		t.Errorf("a member failing its trial: %s %q, want open naming it", failed.State, failed.Reason)
	}
	trial[1].State = circuit.Closed
	paused := trial[1]
	paused.State, paused.PauseUntil = circuit.ForcedOpen, at
	if _, changed := downstream.Settle(d, []circuit.Circuit{trial[0], paused, trial[2]}, at); changed {
		t.Error("settled while a member's pause had not been resumed by the evaluator yet")
	}
	closed, changed := downstream.Settle(d, trial, at)
	if !changed || closed.State != downstream.Closed || closed.Episode != 1 {
		t.Errorf("every member closed: %s episode %d", closed.State, closed.Episode)
	}
	if again, _ := downstream.Trip(closed, "bob", "again", at); again.Episode != 2 || len(again.Answers) != 0 {
		t.Errorf("the next trip is episode %d with %d answers kept, want 2 and none", again.Episode, len(again.Answers))
	}
}

// Members in one app failing on their own never trip the others: the
// quorum counts apps; a member the downstream itself opened counts not.
func TestTheQuorumCountsApps(t *testing.T) {
	d := inventory()
	c := func(id string, s circuit.State) circuit.Circuit {
		app, fn, _ := circuit.SplitID(id)
		return circuit.Circuit{AppID: app, Function: fn, State: s, Settings: circuit.Settings{Threshold: 10, Window: time.Minute}}
	}
	byID := map[string]circuit.Circuit{
		"orders/Process": c("orders/Process", circuit.Open), "orders/Take": c("orders/Take", circuit.Closed), "shipping/Reserve": c("shipping/Reserve", circuit.Closed),
	}
	counts := map[string]circuit.Counts{"orders/Take": {Counted: 50}}
	if reason, met := downstream.QuorumMet(d, downstream.Failing(d, byID, counts)); met {
		t.Fatalf("two members of one app tripped it: %s", reason)
	}
	counts["shipping/Reserve"] = circuit.Counts{Counted: 11}
	reason, met := downstream.QuorumMet(d, downstream.Failing(d, byID, counts))
	if !met || !strings.Contains(reason, "members of 2 apps") {
		t.Fatalf("members of two apps failing: %v %q", met, reason)
	}
	d.Quorum = 0
	if _, met := downstream.QuorumMet(d, downstream.Failing(d, byID, counts)); met {
		t.Error("a quorum of 0 tripped on counts")
	}
}
