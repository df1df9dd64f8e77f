// Package episode is the record of one trip of a circuit, from the trip
// to the flip that closed it again: what failed, who was told and
// whether it reached them, who acknowledged, who resumed. It is what the
// person on call copies into the postmortem.
package episode

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/fusebox/fusebox/internal/alerts"
	"github.com/fusebox/fusebox/internal/audit"
	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/errortexts"
	"github.com/fusebox/fusebox/internal/replay"
	"github.com/fusebox/fusebox/internal/spoken"
)

// ErrNoTrip is an episode number that did not start with a trip: only
// trips have a record (the other episodes are the circuit closed, or a
// half-open trial, which belong to the trip before them).
var ErrNoTrip = errors.New("episode: that episode did not start with a trip, or its flip is no longer kept")

// Record is one episode, as Of assembles it.
type Record struct {
	Circuit string // app/function
	Episode int64
	Trip    circuit.Flip
	// Steps are the flips after the trip up to the one that closed the
	// circuit, oldest first: a trial, a trip again, the resume.
	Steps []circuit.Flip
	// Errors are the failures of the trip's window grouped by their text;
	// ErrorsOther the failures of groups left out. ErrorsGone says the
	// failure rows were pruned: what failed is only in the notices sent.
	Errors      []errortexts.Group
	ErrorsOther int
	ErrorsGone  bool
	// ErrorsPartial says the window held more rows than a grouping reads
	// (errortexts.MaxRows): the groups are of its first stored seconds.
	ErrorsPartial bool
	Notices       []alerts.Message
	Actions       []audit.Entry // who did what to the circuit meanwhile
	// Replay is where each partition stood before the first failure and,
	// if the circuit was resumed from there, what was replayed; nil for a
	// function that names no Event Hub or was tripped before it was kept.
	Replay *replay.Record
}

// Events says, of an Event Hubs function's episode, how many events the
// failures before the trip skipped, how many were replayed and how many
// are lost for good; ok is false when the record has no replay.
func (r Record) Events() (skipped, replayed, lost int64, ok bool) {
	if r.Replay == nil || r.Replay.Problem != "" {
		return 0, 0, 0, false
	}
	rp, again, past, _ := r.Replay.Totals()
	skipped = max(rp-again, 0) + past
	switch {
	case !r.Replay.Finished.IsZero():
		replayed, lost, _ = r.Replay.Outcome()
	default:
		if _, closed := r.Closed(); closed {
			lost = skipped // resumed where it stopped: none was replayed
		}
	}
	return skipped, replayed, lost, true
}

// Flips finds episode n's trip among flips (any order) and the flips
// after it to the one that closed the circuit, oldest first.
func Flips(flips []circuit.Flip, n int64) (trip circuit.Flip, steps []circuit.Flip, err error) {
	sorted := slices.Clone(flips)
	slices.SortFunc(sorted, func(a, b circuit.Flip) int { return int(a.Episode - b.Episode) })
	i := slices.IndexFunc(sorted, func(f circuit.Flip) bool { return f.Episode == n })
	if i < 0 || !Starts(sorted[i]) {
		return circuit.Flip{}, nil, ErrNoTrip
	}
	for _, f := range sorted[i+1:] {
		steps = append(steps, f)
		if f.To == circuit.Closed {
			break
		}
	}
	return sorted[i], steps, nil
}

// Starts says whether f starts an episode: a running circuit (closed,
// or throttled: lowering its concurrency was not enough) switched off, by
// the evaluator or by hand. A re-trip after a trial run belongs to the
// episode it continues.
func Starts(f circuit.Flip) bool {
	return (f.From == circuit.Closed || f.From == circuit.Throttled) && f.To.TriggerOff()
}

// Last is the last episode the record covers: the closing flip's, or
// the trip's while nothing followed it.
func (r Record) Last() int64 {
	if len(r.Steps) > 0 {
		return r.Steps[len(r.Steps)-1].Episode
	}
	return r.Episode
}

// Closed says whether the episode ended, and when: the circuit closed
// again, or was resumed into a ramp back up (a throttle stage's resume:
// the trigger is on from then).
func (r Record) Closed() (time.Time, bool) {
	f, ok := r.Closing()
	return f.At, ok
}

// Closing is the step that ended the episode (see Closed).
func (r Record) Closing() (circuit.Flip, bool) {
	for _, f := range r.Steps {
		if f.To == circuit.Closed || f.To == circuit.Throttled && f.From.TriggerOff() {
			return f, true
		}
	}
	return circuit.Flip{}, false
}

// Ended is when the record's time span ends: the close, or now.
func (r Record) Ended(now time.Time) time.Time {
	if at, ok := r.Closed(); ok {
		return at
	}
	return now
}

// Acknowledged is the first acknowledgement of the episode, if any.
func (r Record) Acknowledged() (audit.Entry, bool) {
	for _, a := range r.Actions {
		if a.Action == "acknowledged" {
			return a, true
		}
	}
	return audit.Entry{}, false
}

// Delivered counts the notices that reached their destination.
func (r Record) Delivered() (sent, failed, waiting int) {
	for _, m := range r.Notices {
		switch m.State {
		case alerts.Sent:
			sent++
		case alerts.Failed:
			failed++
		default:
			waiting++
		}
	}
	return sent, failed, waiting
}

// Counted says what the trip counted, in words: "101 failures in 1m
// (threshold 100)" or "60 of 100 calls failed in 1m (rule 50 %)".
func Counted(f circuit.Flip) string {
	span := spoken.Duration(f.Window)
	if f.Calls > f.Count {
		return fmt.Sprintf("%d of %d calls failed in %s", f.Count, f.Calls, span)
	}
	return fmt.Sprintf("%d failures in %s (threshold %d)", f.Count, span, f.Threshold)
}

// Destination says where a notice went, for people: a mail address as it
// is, a channel by its id (a slug).
func Destination(to string) string {
	if id, ok := strings.CutPrefix(to, "channel:"); ok {
		return "channel " + id
	}
	return to
}

// Markdown is the record for a postmortem, times in UTC.
func (r Record) Markdown(now time.Time) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s, episode %d\n\n", r.Circuit, r.Episode)
	fmt.Fprintf(&b, "- **Tripped** %s by %s: %s\n", stamp(r.Trip.At), cell(r.Trip.Actor), cell(r.Trip.Reason))
	fmt.Fprintf(&b, "- **Counted** %s\n", Counted(r.Trip))
	if a, ok := r.Acknowledged(); ok {
		fmt.Fprintf(&b, "- **Acknowledged** %s by %s, %s after the trip\n", stamp(a.At), cell(a.Actor), AfterTrip(r.Trip.At, a.At))
	} else {
		b.WriteString("- **Acknowledged**: nobody did\n")
	}
	if last, ok := r.Closing(); ok {
		ramp := ""
		if last.To == circuit.Throttled {
			ramp = " (resumed at a lower concurrency, ramping back up)"
		}
		fmt.Fprintf(&b, "- **Closed** %s by %s, %s after the trip%s\n", stamp(last.At), cell(last.Actor), AfterTrip(r.Trip.At, last.At), ramp)
	} else {
		fmt.Fprintf(&b, "- **Still open** at %s, %s after the trip\n", stamp(now), AfterTrip(r.Trip.At, now))
	}
	sent, failed, waiting := r.Delivered()
	fmt.Fprintf(&b, "- **Notices**: %d delivered, %d failed, %d not sent yet\n", sent, failed, waiting)
	if skipped, replayed, lost, ok := r.Events(); ok {
		fmt.Fprintf(&b, "- **Events**: %s\n", EventsText(skipped, replayed, lost, r.Replay))
		if r.Replay != nil && len(r.Replay.Steps) > 0 {
			b.WriteString("\n| Partition | Replayed | Lost | Note |\n|---|---:|---:|---|\n")
			for _, s := range r.Replay.Steps {
				fmt.Fprintf(&b, "| %s | %d | %d | %s |\n", cell(s.Partition), s.Replayed, s.Lost, cell(s.Reason))
			}
		}
	}

	b.WriteString("\n## What failed\n\n")
	switch {
	case r.ErrorsGone:
		b.WriteString("The failure rows of this episode are no longer kept; the trip's notices carried its commonest errors.\n")
	case len(r.Errors) == 0:
		b.WriteString("No failure of the trip's window carried an error text.\n")
	default:
		b.WriteString("| Failures | Error | First | Last | Instances |\n|---:|---|---|---|---|\n")
		for _, g := range r.Errors {
			fmt.Fprintf(&b, "| %d | %s | %s | %s | %s |\n", g.Count, cell(g.Text()), stamp(g.First), stamp(g.Last), cell(strings.Join(g.Sources, ", ")))
		}
		if r.ErrorsOther > 0 {
			fmt.Fprintf(&b, "\nAnd %d failures of other errors.\n", r.ErrorsOther)
		}
		if r.ErrorsPartial {
			fmt.Fprintf(&b, "\nGrouped from the window's first %d stored seconds; the rest were not read.\n", errortexts.MaxRows)
		}
	}

	b.WriteString("\n## Timeline\n\n| When | What | Who |\n|---|---|---|\n")
	for _, e := range r.Timeline() {
		fmt.Fprintf(&b, "| %s | %s | %s |\n", stamp(e.At), cell(e.What), cell(e.Who))
	}
	return b.String()
}

// EventsText says what became of the events the failures before the trip
// skipped, in words.
func EventsText(skipped, replayed, lost int64, rec *replay.Record) string {
	switch {
	case rec != nil && !rec.Finished.IsZero():
		return fmt.Sprintf("the failures before the trip skipped up to about %d events; resumed from before the first failure, %d were replayed and %d are lost for good", skipped, replayed, lost)
	case rec != nil && rec.Open():
		return fmt.Sprintf("the failures before the trip skipped up to about %d events; a resume from before the first failure stopped midway and can be run again", skipped)
	case lost > 0:
		return fmt.Sprintf("the failures before the trip skipped up to about %d events; resumed where it stopped, they are lost", lost)
	}
	return fmt.Sprintf("the failures before the trip skipped up to about %d events, waiting to be replayed while the circuit is open", skipped)
}

// Event is one line of the timeline.
type Event struct {
	At   time.Time
	What string
	Who  string
}

// Timeline is the trip, the steps, the notices and the actions, in order.
func (r Record) Timeline() []Event {
	flip := func(f circuit.Flip) Event {
		what := fmt.Sprintf("%s → %s", f.From, f.To)
		if f.Reason != "" {
			what += ": " + f.Reason
		}
		return Event{At: f.At, What: what, Who: f.Actor}
	}
	out := []Event{flip(r.Trip)}
	for _, f := range r.Steps {
		out = append(out, flip(f))
	}
	for _, m := range r.Notices {
		what := fmt.Sprintf("%s notice to %s: %s", m.Kind, Destination(m.To), NoticeState(m))
		at := m.CreatedAt
		if !m.SentAt.IsZero() {
			at = m.SentAt
		}
		out = append(out, Event{At: at, What: what, Who: "Fusebox"})
	}
	for _, a := range r.Actions {
		if a.Action == "tripped" || a.Action == "resumed" {
			continue // the flips say these, with their counts
		}
		what := a.Action
		if a.Detail != "" {
			what += ": " + a.Detail
		}
		out = append(out, Event{At: a.At, What: what, Who: a.Actor})
	}
	slices.SortStableFunc(out, func(a, b Event) int { return a.At.Compare(b.At) })
	return out
}

// NoticeState says what became of a notice, for people.
func NoticeState(m alerts.Message) string {
	switch m.State {
	case alerts.Sent:
		return "delivered"
	case alerts.Failed:
		return fmt.Sprintf("given up after %d attempts", m.Attempts)
	case alerts.Sending:
		return "being sent"
	}
	if m.Attempts > 0 {
		return fmt.Sprintf("not delivered yet (%d attempts)", m.Attempts)
	}
	return "not sent yet"
}

// AfterTrip says how long after the trip at came, in whole seconds between
// the stamps the record shows, so the record agrees with itself.
func AfterTrip(trip, at time.Time) string {
	return spoken.Duration(at.Truncate(time.Second).Sub(trip.Truncate(time.Second)))
}

// markdownEscapes keeps text that others wrote (error texts, reasons,
// names) from being read as Markdown: no link, tag, code span or table
// cell of its own, and one line.
var markdownEscapes = strings.NewReplacer("\\", `\\`, "|", `\|`, "`", "\\`", "[", `\[`, "]", `\]`, "<", `\<`, ">", `\>`, "*", `\*`, "_", `\_`,
	"\r\n", " ", "\n", " ", "\r", " ")

// cell is text that others wrote, as one line of Markdown.
func cell(s string) string { return markdownEscapes.Replace(s) }

func stamp(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05 UTC") }
