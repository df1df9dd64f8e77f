package wording

import (
	"fmt"
	"strings"
	"time"

	"github.com/fusebox/fusebox/internal/alerts"
	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/hostinsight"
	"github.com/fusebox/fusebox/internal/spoken"
	"github.com/fusebox/fusebox/internal/views"
)

// Retention says how long the events waiting behind a switched-off
// trigger are safe, for the circuit and resume pages and the reminders;
// urgent within the last reminder step. Empty when nothing waits or
// nothing is known of their age.
func Retention(r hostinsight.Retention, now time.Time) (text string, urgent bool) {
	if r.Waiting == 0 || r.Oldest.IsZero() {
		return "", false
	}
	oldest := fmt.Sprintf("The oldest waiting event arrived %s, on partition %s", views.Ago(now, r.Oldest), r.Partition)
	if len(r.Unread) > 0 {
		// Said, not hidden: an unread partition may hold an older event.
		oldest = fmt.Sprintf("The oldest waiting event read arrived %s, on partition %s (partition %s did not answer in time and may hold older ones)",
			views.Ago(now, r.Oldest), r.Partition, strings.Join(r.Unread, ", "))
	}
	if r.Keep == 0 {
		return oldest + ". Set the hub's retention in the circuit's settings to see when waiting events begin to expire.", false
	}
	at := r.Expires.UTC().Format("Mon 2 Jan 15:04 MST")
	keeps := "the hub keeps events " + spoken.Duration(r.Keep)
	if r.FromAzure {
		keeps += " (as Azure says)"
	}
	if !now.Before(r.Expires) {
		return fmt.Sprintf("%s; %s, so they began to expire at %s: resume now, or more are lost.", oldest, keeps, at), true
	}
	last := hostinsight.ReminderSteps[len(hostinsight.ReminderSteps)-1]
	return fmt.Sprintf("%s; %s, so they begin to expire %s, at %s. Resume before then, or they are lost.",
		oldest, keeps, views.Until(now, r.Expires), at), r.Expires.Sub(now) <= last
}

// retentionWords are a reminder ahead of the hub's retention, its
// escalation, and the notice that events were lost, with what the hub
// says now; without it, what the kind says.
func (c Composer) retentionWords(w *words, model *views.AlertMail, m alerts.Message, ci circuit.Circuit, a circuit.App, name string, link func()) {
	var r hostinsight.Retention
	read := false
	if c.Retention != nil {
		r, read = c.Retention(ci, a)
	}
	now := c.Now()
	off := fmt.Sprintf("The trigger of %s in %s has been off since %s (%s).", ci.Function, name, model.ChangedAt, ci.Reason)
	waiting := ""
	if read && r.Waiting > 0 {
		waiting = fmt.Sprintf(" About %d events wait behind its checkpoints.", r.Waiting)
	}
	if ci.State != circuit.ForcedOpen {
		link()
	}
	if m.Kind == alerts.KindEventsLost {
		w.typ = "circuit.events_lost"
		lost := "Events"
		if read && r.Lost > 0 {
			lost = fmt.Sprintf("%d events", r.Lost)
		}
		w.title = fmt.Sprintf("%s expired unread: %s / %s is still off", lost, name, ci.Function)
		model.Heading = lost + " expired before " + ci.Function + " read them"
		model.Intro = off + " " + lost + " waiting behind its checkpoints passed the hub's retention and are gone: resuming cannot bring them back." + waiting + " Resume it once the cause is fixed, or more are lost."
		return
	}
	step, _ := alerts.ExpiringStep(m.Kind)
	when := "within " + spoken.Duration(step)
	if text, _ := Retention(r, now); read && text != "" {
		when = views.Until(now, r.Expires)
		waiting += " " + text
	}
	if m.Kind == alerts.KindExpiringEscalated {
		w.typ = "circuit.expiring_escalated"
		w.title = fmt.Sprintf("Escalated: events waiting for %s / %s begin to expire %s, unacknowledged", name, ci.Function, when)
		model.Heading = "Waiting events begin to expire " + when + ", and nobody has acknowledged it"
		model.Intro = off + waiting + " Nobody has acknowledged it, so you are told as its escalation list."
		return
	}
	w.typ = "circuit.expiring"
	w.title = fmt.Sprintf("Events begin to expire %s: %s / %s is off", when, name, ci.Function)
	model.Heading = "Events waiting for " + ci.Function + " begin to expire " + when
	model.Intro = off + waiting
}
