package episode_test

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fusebox/fusebox/internal/alerts"
	"github.com/fusebox/fusebox/internal/audit"
	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/episode"
	"github.com/fusebox/fusebox/internal/errortexts"
	"github.com/fusebox/fusebox/internal/replay"
)

func TestFlipsFindTheTripAndWhatFollowedIt(t *testing.T) {
	t0 := time.Date(2026, 12, 5, 9, 0, 0, 0, time.UTC)
	flip := func(n int64, from, to circuit.State) circuit.Flip {
		return circuit.Flip{Episode: n, From: from, To: to, At: t0.Add(time.Duration(n) * time.Minute)}
	}
	// As the store returns them: newest first.
	log := []circuit.Flip{
		flip(6, circuit.ForcedOpen, circuit.Closed),
		flip(5, circuit.Closed, circuit.ForcedOpen),
		flip(4, circuit.Open, circuit.Closed),
		flip(3, circuit.HalfOpen, circuit.Open),
		flip(2, circuit.Open, circuit.HalfOpen),
		flip(1, circuit.Closed, circuit.Open),
		flip(7, circuit.Closed, circuit.Open),
	}
	for _, tc := range []struct {
		name  string
		n     int64
		steps []int64
		err   error
	}{
		{"a trip, a trial that failed, then the resume", 1, []int64{2, 3, 4}, nil},
		{"a trip by hand, then its resume", 5, []int64{6}, nil},
		{"still open: nothing followed yet", 7, nil, nil},
		{"a trial run is not a trip", 2, nil, episode.ErrNoTrip},
		{"a trip again after a trial continues its episode", 3, nil, episode.ErrNoTrip},
		{"a resume is not a trip", 4, nil, episode.ErrNoTrip},
		{"an episode the log does not have", 8, nil, episode.ErrNoTrip},
	} {
		t.Run(tc.name, func(t *testing.T) {
			trip, steps, err := episode.Flips(log, tc.n)
			if !errors.Is(err, tc.err) {
				t.Fatalf("err = %v, want %v", err, tc.err)
			}
			if err != nil {
				return
			}
			var got []int64
			for _, s := range steps {
				got = append(got, s.Episode)
			}
			if trip.Episode != tc.n || !slices.Equal(got, tc.steps) {
				t.Errorf("trip %d, steps %v; want %d, %v", trip.Episode, got, tc.n, tc.steps)
			}
		})
	}
}

// The Markdown agrees with itself (the durations are between the stamps it
// shows), says who acknowledged and closed, and keeps what reporters wrote
// from being read as Markdown.
func TestMarkdownForThePostmortem(t *testing.T) {
	trip := time.Date(2026, 12, 5, 3, 0, 0, 900_000_000, time.UTC)
	rec := episode.Record{
		Circuit: "orders/ProcessOrders", Episode: 3,
		Trip: circuit.Flip{Episode: 3, From: circuit.Closed, To: circuit.Open, At: trip, Actor: circuit.EvaluatorActor,
			Count: 60, Calls: 100, Window: time.Minute, Threshold: 50, Reason: "60 % of 100 calls failed in 1m"},
		Steps: []circuit.Flip{{Episode: 4, From: circuit.Open, To: circuit.Closed, At: trip.Add(20*time.Minute + 200*time.Millisecond), Actor: "alice", Reason: "resumed by alice"}},
		Errors: []errortexts.Group{
			{Fingerprint: "a", Example: "Bad | row\nsee [here](https://evil.example) <b>now</b>", Count: 40, First: trip.Add(-50 * time.Second), Last: trip, Sources: []string{"host-1", "host-2"}},
			{Fingerprint: errortexts.NoText, Count: 20, First: trip.Add(-40 * time.Second), Last: trip},
		},
		ErrorsOther: 3,
		Notices: []alerts.Message{
			{Kind: "opened", To: "oncall@example.com", State: alerts.Sent, CreatedAt: trip, SentAt: trip.Add(2 * time.Second)},
			{Kind: "opened", To: "channel:teams-ops", State: alerts.Failed, Attempts: 8, CreatedAt: trip},
		},
		Actions: []audit.Entry{
			{At: trip.Add(5*time.Minute + 100*time.Millisecond), Actor: "bob", Action: "acknowledged", Detail: "episode 3"},
			{At: trip.Add(6 * time.Minute), Actor: "carol", Action: "acknowledged", Detail: "episode 3"},
		},
	}
	md := rec.Markdown(trip.Add(time.Hour))
	for _, want := range []string{
		"# orders/ProcessOrders, episode 3\n",
		"- **Counted** 60 of 100 calls failed in 1m\n",
		"- **Acknowledged** 2026-12-05 03:05:01 UTC by bob, 5m1s after the trip\n",
		"- **Closed** 2026-12-05 03:20:01 UTC by alice, 20m1s after the trip\n",
		"- **Notices**: 1 delivered, 1 failed, 0 not sent yet\n",
		`| 40 | Bad \| row see \[here\](https://evil.example) \<b\>now\</b\> | 2026-12-05 02:59:10 UTC | 2026-12-05 03:00:00 UTC | host-1, host-2 |`,
		"| 20 | (no error text was reported) |",
		"And 3 failures of other errors.",
		"| 2026-12-05 03:00:02 UTC | opened notice to oncall@example.com: delivered | Fusebox |",
		"| 2026-12-05 03:00:00 UTC | opened notice to channel teams-ops: given up after 8 attempts | Fusebox |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("the Markdown lacks %q:\n%s", want, md)
		}
	}
	// The timeline runs in time order: trip, notices, acknowledgements, close.
	var whens []string
	for _, line := range strings.Split(md[strings.Index(md, "## Timeline"):], "\n") {
		if at, _, ok := strings.Cut(strings.TrimPrefix(line, "| "), " UTC |"); ok && strings.HasPrefix(line, "| 2026") {
			whens = append(whens, at)
		}
	}
	if len(whens) != 6 || !slices.IsSorted(whens) {
		t.Errorf("the timeline's times are %q; want six, in order", whens)
	}
}

// An episode tripped from a throttle starts a record; a resume into the
// throttle's ramp ends it (the trigger is on from then), not the ramp's
// last step minutes later.
func TestAResumeIntoARampEndsTheEpisode(t *testing.T) {
	t0 := time.Date(2026, 12, 5, 9, 0, 0, 0, time.UTC)
	flip := func(n int64, from, to circuit.State, actor string) circuit.Flip {
		return circuit.Flip{Episode: n, From: from, To: to, At: t0.Add(time.Duration(n) * time.Minute), Actor: actor}
	}
	flips := []circuit.Flip{
		flip(1, circuit.Closed, circuit.Throttled, "evaluator"),
		flip(2, circuit.Throttled, circuit.Open, "evaluator"),
		flip(3, circuit.Open, circuit.Throttled, "ops@example.com"),
		flip(4, circuit.Throttled, circuit.Throttled, "evaluator"),
		flip(5, circuit.Throttled, circuit.Closed, "evaluator"),
	}
	if _, _, err := episode.Flips(flips, 1); err == nil {
		t.Error("a throttle alone started an episode record")
	}
	trip, steps, err := episode.Flips(flips, 2)
	if err != nil || trip.Episode != 2 || len(steps) != 3 {
		t.Fatalf("the trip from a throttle: %+v, %d steps, %v", trip, len(steps), err)
	}
	r := episode.Record{Circuit: "orders/Process", Episode: 2, Trip: trip, Steps: steps}
	at, ok := r.Closed()
	if !ok || !at.Equal(t0.Add(3*time.Minute)) {
		t.Errorf("closed %v at %s; want at the resume, 09:03", ok, at)
	}
	if md := r.Markdown(t0.Add(time.Hour)); !strings.Contains(md, "- **Closed** 2026-12-05 09:03:00 UTC by ops@example.com, 1m after the trip (resumed at a lower concurrency, ramping back up)") {
		t.Errorf("the record says:\n%s", md)
	}
}

// What the record says of the events the failures before the trip
// skipped: waiting while open, lost when resumed where it stopped, and
// what a resume from before the first failure replayed and lost.
func TestTheRecordSaysWhatBecameOfTheSkippedEvents(t *testing.T) {
	t0 := time.Date(2026, 12, 6, 9, 0, 0, 0, time.UTC)
	point := replay.Point{Episode: 1, FirstFailure: t0.Add(-20 * time.Second), Partitions: []replay.Partition{
		{Partition: "0", Known: true, Events: 300, Again: 100},
		{Partition: "1", Known: true, Events: 250, Again: 50, Expired: 20},
	}}
	trip := circuit.Flip{Episode: 1, From: circuit.Closed, To: circuit.Open, At: t0}
	closing := []circuit.Flip{{Episode: 2, From: circuit.Open, To: circuit.Closed, At: t0.Add(time.Minute)}}
	finished := replay.Record{Point: point, Planned: t0.Add(50 * time.Second), Finished: t0.Add(time.Minute),
		Steps: []replay.Step{{Partition: "0", State: replay.Written, Replayed: 300}, {Partition: "1", State: replay.Written, Replayed: 230, Lost: 20}}}
	unfinished := replay.Record{Point: point, Planned: t0.Add(50 * time.Second), Steps: finished.Steps}
	for _, tc := range []struct {
		name  string
		rec   episode.Record
		words string
		lost  int64
	}{
		{"open", episode.Record{Trip: trip, Replay: &replay.Record{Point: point}}, "skipped up to about 400 events, waiting to be replayed while the circuit is open", 0},
		{"resumed where it stopped", episode.Record{Trip: trip, Steps: closing, Replay: &replay.Record{Point: point}}, "skipped up to about 400 events; resumed where it stopped, they are lost", 400},
		{"resumed from before the first failure", episode.Record{Trip: trip, Steps: closing, Replay: &finished}, "skipped up to about 400 events; resumed from before the first failure, 530 were replayed and 20 are lost for good", 20},
		{"a resume stopped midway", episode.Record{Trip: trip, Replay: &unfinished}, "stopped midway and can be run again", 0},
	} {
		skipped, replayed, lost, ok := tc.rec.Events()
		words := episode.EventsText(skipped, replayed, lost, tc.rec.Replay)
		if !ok || lost != tc.lost || !strings.Contains(words, tc.words) {
			t.Errorf("%s: %q, lost %d; want %q, lost %d", tc.name, words, lost, tc.words, tc.lost)
		}
		if md := tc.rec.Markdown(t0.Add(time.Hour)); !strings.Contains(md, "**Events**: "+words) {
			t.Errorf("%s: the Markdown does not say it:\n%s", tc.name, md)
		}
	}
	if _, _, _, ok := (episode.Record{Trip: trip}).Events(); ok {
		t.Error("a record without a replay says something of events")
	}
}
