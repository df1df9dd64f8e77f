// Package wording writes what alerts say: the mail (HTML and text) and the
// notice for chat and webhook channels, about circuits and about jobs, with
// the same words everywhere. The transports are internal/notify's.
package wording

import (
	"bytes"
	"context"
	"fmt"
	"html/template"
	"net/url"
	"strings"
	"time"

	"github.com/fusebox/fusebox/internal/alerts"
	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/errortexts"
	"github.com/fusebox/fusebox/internal/hostinsight"
	"github.com/fusebox/fusebox/internal/jobs"
	"github.com/fusebox/fusebox/internal/spoken"
	"github.com/fusebox/fusebox/internal/views"
)

// Composer writes the mails.
type Composer struct {
	Signer  *alerts.Signer
	BaseURL *url.URL
	LinkTTL time.Duration
	Now     func() time.Time
	// Errors, when set, reads what failed in a circuit's window
	// (errortexts.OfCircuit), for the alerts that a trip or a reminder
	// sends; an error leaves them out.
	Errors errortexts.Grouper
	// Retention, when set, reads what waits behind a switched-off
	// trigger and when it begins to expire, for the reminders ahead of
	// the hub's retention; false leaves the numbers out.
	Retention func(ci circuit.Circuit, app circuit.App) (hostinsight.Retention, bool)
}

// mailErrors is how many groups of what failed an alert names.
const mailErrors = 3

// errorsOf are the top groups of what failed, in lines, and over when.
func (c Composer) errorsOf(ci circuit.Circuit) ([]string, string) {
	if c.Errors == nil {
		return nil, ""
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	groups, other, span, err := c.Errors.OfCircuit(ctx, ci, c.Now(), mailErrors)
	if err != nil || len(groups) == 0 {
		return nil, ""
	}
	lines := make([]string, 0, len(groups)+1)
	for _, g := range groups {
		lines = append(lines, g.Line(200))
	}
	if other > 0 {
		lines = append(lines, fmt.Sprintf("and %d more with other errors", other))
	}
	return lines, span
}

// Compose writes one message: HTML and plain text with the same words.
func (c Composer) Compose(m alerts.Message, ci circuit.Circuit, app circuit.App) (alerts.Mail, error) {
	w := c.words(m, ci, app)
	var html bytes.Buffer
	if err := views.AlertMailHTML(w.model).Render(context.Background(), &html); err != nil {
		return alerts.Mail{}, err
	}
	return alerts.Mail{To: []string{m.To}, Subject: "[Fusebox] " + w.title, Text: text(w.model), HTML: html.String(),
		MessageID: fmt.Sprintf("<%x@fusebox>", []byte(m.ID))}, nil
}

// words are what an alert about a circuit says, whatever carries it.
type words struct {
	typ   string // the Notice type
	title string
	model views.AlertMail
}

func (c Composer) words(m alerts.Message, ci circuit.Circuit, app circuit.App) words {
	name := app.DisplayName
	if name == "" {
		name = ci.AppID
	}
	base := strings.TrimRight(c.BaseURL.String(), "/")
	model := views.AlertMail{
		App: name, Function: ci.Function, State: ci.State.String(), Reason: ci.Reason,
		Rule:       ci.RuleText(),
		ChangedAt:  ci.ChangedAt.UTC().Format("Mon 2 Jan 2006 15:04:05 MST"),
		CircuitURL: base + "/circuits/" + url.PathEscape(ci.AppID) + "/" + url.PathEscape(ci.Function),
		Settings:   ci.Settings,
	}
	// The link opens a page that asks before it acts: a mail scanner or
	// a chat's link preview that follows it resumes nothing.
	link := func() {
		expires := c.Now().Add(c.LinkTTL)
		token := c.Signer.Sign(alerts.Link{Circuit: ci.ID(), Episode: ci.Episode, Incarnation: ci.Incarnation, Action: "resume", Recipient: m.To, Expires: expires})
		model.ResumeURL = base + "/resume/" + token
		model.Expires = expires.UTC().Format("Mon 2 Jan 2006 15:04 MST")
	}
	w := words{typ: "circuit.opened"}
	reminder := strings.HasPrefix(m.Kind, "reminder-")
	if reminder {
		w.typ = "circuit.reminder"
	}
	switch {
	case m.Kind == alerts.KindFlapping:
		w.typ = "circuit.flapping"
		n := ci.ChangesSince(c.Now().Add(-time.Hour))
		w.title = fmt.Sprintf("%s / %s is flapping: %d changes in the last hour", name, ci.Function, n)
		model.Heading = ci.Function + " is flapping"
		model.Intro = fmt.Sprintf("The circuit of %s in %s changed %d times in the last hour; it is %s now (%s). Further changes this hour are summarised, not alerted one by one.", ci.Function, name, n, ci.State, ci.Reason)
		if ci.State == circuit.Open && !ci.Shadow {
			link()
		}
	case m.Kind == alerts.KindResumed && ci.State == circuit.Throttled:
		w.typ = "circuit.resumed"
		w.title = fmt.Sprintf("%s / %s resumed, ramping back up", name, ci.Function)
		model.Heading = ci.Function + " runs again, at a lower concurrency first"
		model.Intro = fmt.Sprintf("The trigger of %s is back on: %s. It continues from its last checkpoint with the app's concurrency for it lowered, and Fusebox steps it back up to exactly what was set while failures stay under its throttle rule (%s).", ci.Function, ci.Reason, ci.ThrottleText())
	case m.Kind == alerts.KindResumed:
		w.typ = "circuit.resumed"
		w.title = fmt.Sprintf("%s / %s resumed", name, ci.Function)
		model.Heading = ci.Function + " runs again"
		model.Intro = fmt.Sprintf("The circuit of %s closed: %s. The function continues from its last checkpoint.", ci.Function, ci.Reason)
	case m.Kind == alerts.KindThrottleAsked:
		w.typ = "circuit.throttle_asked"
		model.Errors, model.ErrorsSpan = c.errorsOf(ci)
		expires := c.Now().Add(c.LinkTTL)
		token := c.Signer.Sign(alerts.Link{Circuit: ci.ID(), Episode: ci.Episode, Incarnation: ci.Incarnation, Action: alerts.ActionThrottle, Recipient: m.To, Expires: expires})
		model.ApplyURL = base + "/throttle/" + token
		model.Expires = expires.UTC().Format("Mon 2 Jan 2006 15:04 MST")
		w.title = fmt.Sprintf("%s / %s: lower its concurrency?", name, ci.Function)
		model.Heading = "Throttle " + ci.Function + "?"
		model.Intro = fmt.Sprintf("Failures of %s in %s passed its throttle rule: %s. Fusebox can lower the app's concurrency for it instead of switching it off (writing the settings restarts the app); this circuit asks first. Nothing changes until someone applies it. The trip rule still applies meanwhile.", ci.Function, name, ci.Reason)
	case m.Kind == alerts.KindThrottled:
		w.typ = "circuit.throttled"
		model.Errors, model.ErrorsSpan = c.errorsOf(ci)
		w.title = fmt.Sprintf("%s / %s throttled: concurrency lowered, trigger on", name, ci.Function)
		model.Heading = ci.Function + " runs at a lower concurrency"
		model.Intro = fmt.Sprintf("Failures of %s in %s passed its throttle rule: %s. Rather than switch its trigger off, Fusebox lowered the app's concurrency for it; writing the settings restarts the app. It trips if the trip rule still fires, and steps back up to exactly what was set while failures stay under the rule (%s).", ci.Function, name, ci.Reason, ci.ThrottleText())
	case m.Kind == alerts.KindRestored:
		w.typ = "circuit.restored"
		w.title = fmt.Sprintf("%s / %s back at full concurrency", name, ci.Function)
		model.Heading = ci.Function + " runs as before"
		model.Intro = fmt.Sprintf("The throttle of %s ended: %s. The app's settings are back exactly as they were.", ci.Function, ci.Reason)
	case m.Kind == alerts.KindHeld:
		w.typ = "circuit.held"
		w.title = fmt.Sprintf("Guardrail held a trip of %s / %s", name, ci.Function)
		model.Heading = ci.Function + " was not switched off"
		model.Intro = fmt.Sprintf("The circuit of %s in %s would have tripped, but the app's guardrail held it: %s. The trigger stays on. Trip it by hand in Fusebox if it should stop.", ci.Function, name, ci.Reason)
	case ci.Shadow:
		// Shadow mode: what the circuit would have done, for information.
		w.title = fmt.Sprintf("%s / %s would have been switched off (shadow mode)", name, ci.Function)
		model.Heading = ci.Function + " would have been switched off"
		model.Intro = fmt.Sprintf("The circuit of %s in %s is in shadow mode: it would have switched the trigger off because %s. The trigger was left on. Arm the circuit in Fusebox to let it act.", ci.Function, name, ci.Reason)
	case m.Kind == alerts.KindEscalated:
		w.typ = "circuit.escalated"
		link()
		model.Errors, model.ErrorsSpan = c.errorsOf(ci)
		model.Cost = app.SwitchCost(ci.Function, nil)
		after := spoken.Duration(ci.Escalate.After)
		w.title = fmt.Sprintf("Escalated: %s / %s is off, unacknowledged for %s", name, ci.Function, after)
		model.Heading = ci.Function + " is off and nobody has acknowledged it"
		told := "Its alerts went out"
		if len(ci.Recipients) > 0 {
			told = "Its recipients (" + strings.Join(ci.Recipients, ", ") + ") were told"
		}
		model.Intro = fmt.Sprintf("Fusebox switched off the trigger of %s in %s at %s because %s. %s, and nobody has acknowledged it in %s, so you are told as its escalation list. Acknowledge it from the link to say you are on it, or resume it once the cause is fixed.",
			ci.Function, name, model.ChangedAt, ci.Reason, told, after)
	case m.Kind == alerts.KindPauseAhead:
		w.typ = "circuit.pause_ahead"
		opens := time.Unix(m.Episode, 0).UTC()
		p, _, _, _ := circuit.NextPause(ci, opens.Add(-time.Second))
		w.title = fmt.Sprintf("%s / %s pauses at %s for %s: waiting events would expire", name, ci.Function, opens.Format("15:04 MST"), spoken.Duration(p.Duration))
		model.Heading = ci.Function + "'s planned pause is longer than its hub keeps events"
		model.Intro = fmt.Sprintf("The pause window %s of %s in %s opens at %s and lasts %s, but its hub keeps events %s: the events waiting when it opens would be gone before the trigger comes back on. Shorten the window, or end the pause early from the circuit's page.",
			p, ci.Function, name, opens.Format("Mon 2 Jan 15:04 MST"), spoken.Duration(p.Duration), spoken.Duration(ci.HubRetention))
	case strings.HasPrefix(m.Kind, alerts.KindExpiringPrefix) || m.Kind == alerts.KindEventsLost:
		c.retentionWords(&w, &model, m, ci, app, name, link)
	case ci.State == circuit.ForcedOpen:
		// A trip by hand is deliberate: the alert informs, and only an
		// operator signed in to Fusebox undoes it, so it carries no link.
		w.title = fmt.Sprintf("%s / %s switched off by hand", name, ci.Function)
		if reminder {
			w.title = "Still off by hand: " + name + " / " + ci.Function
		}
		model.Heading = ci.Function + "'s trigger is off"
		model.Intro = fmt.Sprintf("An operator switched off the trigger of %s in %s: %s. It stays off until an operator resumes it in Fusebox.", ci.Function, name, ci.Reason)
	default:
		link()
		model.Errors, model.ErrorsSpan = c.errorsOf(ci)
		model.Cost = app.SwitchCost(ci.Function, nil)
		w.title = fmt.Sprintf("%s / %s is %s: trigger off", name, ci.Function, ci.State)
		model.Heading = ci.Function + "'s trigger is off"
		model.Intro = fmt.Sprintf("Fusebox switched off the trigger of %s in %s because %s.", ci.Function, name, ci.Reason)
		if reminder {
			w.title = "Still off: " + name + " / " + ci.Function
			model.Heading = ci.Function + " is still off"
			model.Intro = fmt.Sprintf("The trigger of %s in %s has been off since %s (%s).", ci.Function, name, model.ChangedAt, ci.Reason)
		}
	}
	w.model = model
	return w
}

// Notice writes one message for a chat or webhook channel: the mail's
// words as facts, and a link to the page that reviews (and resumes).
func (c Composer) Notice(m alerts.Message, ci circuit.Circuit, app circuit.App) (alerts.Notice, error) {
	w := c.words(m, ci, app)
	n := alerts.Notice{Type: w.typ, Title: w.title, Text: w.model.Intro, At: ci.ChangedAt,
		Facts: []alerts.Fact{{Name: "Function", Value: w.model.Function}, {Name: "App", Value: w.model.App}, {Name: "State", Value: w.model.State},
			{Name: "Why", Value: w.model.Reason}, {Name: "Rule", Value: w.model.Rule}, {Name: "When", Value: w.model.ChangedAt}},
		LinkURL: w.model.CircuitURL, LinkText: "Open the circuit in Fusebox",
		Data: map[string]any{"app": ci.AppID, "function": ci.Function, "state": ci.State.String(), "episode": ci.Episode,
			"reason": ci.Reason, "rule": w.model.Rule, "changed_at": ci.ChangedAt.UTC(), "circuit_url": w.model.CircuitURL, "kind": m.Kind}}
	// One incident per trip: the circuit's incarnation names it while it
	// is open, and a resume resolves it. A held trip is its own, left for
	// a person to resolve, since the circuit never opened.
	n.Incident = "fusebox/circuit/" + ci.ID() + "/" + ci.Incarnation
	if m.Kind == alerts.KindHeld {
		n.Incident = fmt.Sprintf("fusebox/held/%s/%s/%d", ci.ID(), ci.Incarnation, ci.Episode)
	}
	if w.model.Cost != "" {
		n.Facts = append(n.Facts, alerts.Fact{Name: "Switching", Value: w.model.Cost})
	}
	if rb := w.model.Settings.Runbook; rb != (circuit.Runbook{}) {
		n.Facts = append(n.Facts, alerts.Fact{Name: "Runbook", Value: strings.TrimSpace(rb.URL + " " + rb.Note)})
		n.Data["runbook_url"], n.Data["runbook_note"] = rb.URL, rb.Note
	}
	if len(w.model.Errors) > 0 {
		n.Facts = append(n.Facts, alerts.Fact{Name: "What failed", Value: strings.Join(w.model.Errors, "\n")})
		n.Data["errors"] = w.model.Errors
	}
	// A channel is read by everyone in it, and a webhook by whoever runs
	// the receiver: the bearer resume link stays in mail, addressed to one
	// recipient. Channels link to the circuit's page, behind sign-in.
	return n, nil
}

func text(m views.AlertMail) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n\n%s\n\nFunction:  %s in %s\nState:     %s\nWhy:       %s\nTrips at:  %s\nWhen:      %s\n",
		m.Heading, m.Intro, m.Function, m.App, m.State, m.Reason, m.Rule, m.ChangedAt)
	if rb := strings.TrimSpace(m.Settings.Runbook.URL + " " + m.Settings.Runbook.Note); rb != "" {
		fmt.Fprintf(&b, "Runbook:   %s\n", rb)
	}
	b.WriteString("\n")
	if m.Cost != "" {
		fmt.Fprintf(&b, "%s\n\n", m.Cost)
	}
	if len(m.Errors) > 0 {
		fmt.Fprintf(&b, "What failed, in %s:\n\n", m.ErrorsSpan)
		for _, e := range m.Errors {
			fmt.Fprintf(&b, "  %s\n", e)
		}
		b.WriteString("\n")
	}
	if m.ApplyURL != "" {
		fmt.Fprintf(&b, "Review what it would write and apply it here (the link asks before it acts;\nit works until %s, or until the circuit changes):\n\n  %s\n\n", m.Expires, m.ApplyURL)
	}
	if m.ResumeURL != "" {
		b.WriteString("Events wait in the hub and its checkpoint stays put while the trigger is off,\nfor as long as the hub's retention keeps them. Once the cause is fixed,\nresume the function: it continues from its last checkpoint.")
		if m.Settings.EventHub != "" {
			b.WriteString("\nBefore the trip, the Event Hubs trigger checkpointed past the batches that\nfailed. The review page says how many events that skipped and can resume\nfrom before the first failure, replaying them.")
		}
		fmt.Fprintf(&b, "\nReview and resume here (the link asks before it acts; it works until %s,\nor until the circuit closes):\n\n  %s\n\n", m.Expires, m.ResumeURL)
	}
	fmt.Fprintf(&b, "The circuit in Fusebox:\n\n  %s\n", m.CircuitURL)
	return b.String()
}

// JobComposer writes the mails about jobs.
type JobComposer struct {
	Jobs interface {
		Get(ctx context.Context, id string) (jobs.Job, error)
	}
	BaseURL *url.URL
}

// ComposeJob writes one mail about a job's change of status.
func (c JobComposer) ComposeJob(ctx context.Context, m alerts.Message) (alerts.Mail, error) {
	w, err := c.words(ctx, m)
	if err != nil {
		return alerts.Mail{}, err
	}
	j := w.job
	text := fmt.Sprintf("%s\n\nSchedule: %s (%s)\nSince:    %s\n\nThe job's slots, gaps and runs, with Run now for missed slots:\n\n  %s\n",
		w.what, j.Schedule, j.TimeZone, w.since, w.link)
	html := fmt.Sprintf(`<!DOCTYPE html><html lang="en"><body style="font-family: system-ui, sans-serif; color: #1d2330; max-width: 36rem;"><h1 style="font-size: 1.3rem;">%s</h1><p>%s</p><p>Schedule: <code>%s</code> (%s)</p><p><a href="%s">See the job's slots, gaps and runs</a></p></body></html>`,
		template.HTMLEscapeString(w.title), template.HTMLEscapeString(w.what), template.HTMLEscapeString(j.Schedule), template.HTMLEscapeString(j.TimeZone), template.HTMLEscapeString(w.link))
	return alerts.Mail{To: []string{m.To}, Subject: "[Fusebox] " + w.title, Text: text, HTML: html, MessageID: fmt.Sprintf("<%x@fusebox>", []byte(m.ID))}, nil
}

// JobNotice writes one message about a job for a chat or webhook channel.
func (c JobComposer) JobNotice(ctx context.Context, m alerts.Message) (alerts.Notice, error) {
	w, err := c.words(ctx, m)
	if err != nil {
		return alerts.Notice{}, err
	}
	j := w.job
	return alerts.Notice{Type: "job." + strings.TrimPrefix(m.Kind, "job-"), Title: w.title, Text: w.what, At: time.Unix(m.Episode, 0).UTC(),
		Facts:   []alerts.Fact{{Name: "Job", Value: j.Name}, {Name: "Schedule", Value: j.Schedule + " (" + j.TimeZone + ")"}, {Name: "Since", Value: w.since}},
		LinkURL: w.link, LinkText: "Open the job in Fusebox",
		Data:     map[string]any{"job": j.ID, "name": j.Name, "schedule": j.Schedule, "time_zone": j.TimeZone, "since": time.Unix(m.Episode, 0).UTC(), "job_url": w.link, "kind": m.Kind},
		Incident: "fusebox/job/" + j.ID}, nil
}

type jobWords struct {
	job                      jobs.Job
	title, what, since, link string
}

func (c JobComposer) words(ctx context.Context, m alerts.Message) (jobWords, error) {
	j, err := c.Jobs.Get(ctx, m.Subject().ID)
	if err != nil {
		return jobWords{}, fmt.Errorf("%w: %v", alerts.ErrPermanent, err)
	}
	w := jobWords{job: j, link: strings.TrimRight(c.BaseURL.String(), "/") + "/jobs/" + url.PathEscape(j.ID),
		since: time.Unix(m.Episode, 0).UTC().Format("Mon 2 Jan 2006 15:04 MST")}
	switch m.Kind {
	case alerts.KindJobMissing:
		w.title, w.what = "Job "+j.Name+" is missing", "An expected run of "+j.Name+" did not come within its grace period."
	case alerts.KindJobFailing:
		w.title, w.what = "Job "+j.Name+" is failing", "The last run of "+j.Name+" failed or ran too long."
	default:
		w.title, w.what = "Job "+j.Name+" recovered", j.Name+" ran as expected again."
	}
	return w, nil
}
