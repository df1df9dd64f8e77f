package wording

import (
	"context"
	"errors"
	"fmt"
	"html/template"
	"net/url"
	"strings"
	"time"

	"github.com/fusebox/fusebox/internal/alerts"
	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/downstream"
	"github.com/fusebox/fusebox/internal/spoken"
)

// DownstreamComposer writes the one notice of a downstream's episode: its
// members, each in its app, and what the downstream did to them.
type DownstreamComposer struct {
	Downstreams interface {
		Get(ctx context.Context, name string) (downstream.Downstream, error)
	}
	Circuits interface {
		List(ctx context.Context) ([]circuit.Circuit, error)
	}
	BaseURL *url.URL
	Now     func() time.Time
}

type downstreamWords struct {
	name, title, what, link string
	members                 []string // "app/function: state"
	apps                    int
}

func (c DownstreamComposer) words(ctx context.Context, m alerts.Message) (downstreamWords, error) {
	name, ok := strings.CutPrefix(m.Circuit, alerts.DownstreamPrefix)
	if !ok || !downstream.ValidName(name) {
		return downstreamWords{}, fmt.Errorf("%w: %q names no downstream", alerts.ErrPermanent, m.Circuit)
	}
	d, err := c.Downstreams.Get(ctx, name)
	if errors.Is(err, downstream.ErrNotFound) {
		return downstreamWords{}, fmt.Errorf("%w: the downstream %s was deleted", alerts.ErrPermanent, name)
	}
	if err != nil {
		return downstreamWords{}, err // storage: try again
	}
	if m.Kind == alerts.KindPauseAhead {
		return c.aheadWords(ctx, d, m)
	}
	throttled := m.Kind == alerts.KindDownstreamThrottled
	if d.Episode != m.Episode && !throttled {
		return downstreamWords{}, fmt.Errorf("%w: the episode ended before the notice could be sent", alerts.ErrPermanent)
	}
	cs, err := c.Circuits.List(ctx)
	if err != nil {
		return downstreamWords{}, err
	}
	state := map[string]circuit.Circuit{}
	for _, ci := range cs {
		state[ci.ID()] = ci
	}
	w := downstreamWords{name: name, apps: len(d.Apps()),
		link: strings.TrimRight(c.BaseURL.String(), "/") + "/downstreams/" + url.PathEscape(name)}
	for _, id := range d.Members {
		s := "not a circuit any more"
		if ci, ok := state[id]; ok {
			s = ci.State.String()
		}
		w.members = append(w.members, id+": "+s)
	}
	n := fmt.Sprintf("%d %s in %d %s", len(d.Members), plural(len(d.Members), "function", "functions"), w.apps, plural(w.apps, "app", "apps"))
	if throttled {
		w.title = fmt.Sprintf("%s: %s throttled together", name, n)
		w.what = fmt.Sprintf("An alert on %s lowered the concurrency of every member with a throttle stage, each in its own app; their triggers stay on, and each steps back up as its failures stay under its throttle rule, or trips if they do not.", name)
	} else if m.Kind == alerts.KindDownstreamResumed {
		w.title = fmt.Sprintf("%s: its %s are back on", name, n)
		w.what = fmt.Sprintf("The downstream %s closed: %s.", name, d.Reason)
	} else if !d.PauseUntil.IsZero() {
		w.title = fmt.Sprintf("%s paused: %s switched off together until %s", name, n, d.PauseUntil.UTC().Format("15:04 MST"))
		w.what = fmt.Sprintf("Fusebox switched off the triggers of every function that calls %s, in one episode: %s. They come back on by themselves when it ends; their events wait at their checkpoints.", name, d.Reason)
	} else {
		w.title = fmt.Sprintf("%s failed: %s switched off together", name, n)
		w.what = fmt.Sprintf("Fusebox switched off the triggers of every function that calls %s, in one episode: %s. Their events wait at their checkpoints.", name, d.Reason)
	}
	return w, nil
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// ComposeDownstream writes the one mail of a downstream's change.
func (c DownstreamComposer) ComposeDownstream(ctx context.Context, m alerts.Message) (alerts.Mail, error) {
	w, err := c.words(ctx, m)
	if err != nil {
		return alerts.Mail{}, err
	}
	text := fmt.Sprintf("%s\n\nMembers:\n  %s\n\nSee it, and resume it when the cause is fixed:\n\n  %s\n", w.what, strings.Join(w.members, "\n  "), w.link)
	var items strings.Builder
	for _, mb := range w.members {
		items.WriteString("<li>" + template.HTMLEscapeString(mb) + "</li>")
	}
	html := fmt.Sprintf(`<!DOCTYPE html><html lang="en"><body style="font-family: system-ui, sans-serif; color: #1d2330; max-width: 36rem;"><h1 style="font-size: 1.3rem;">%s</h1><p>%s</p><p>Members:</p><ul>%s</ul><p><a href="%s">See it in Fusebox</a></p></body></html>`,
		template.HTMLEscapeString(w.title), template.HTMLEscapeString(w.what), items.String(), template.HTMLEscapeString(w.link))
	return alerts.Mail{To: []string{m.To}, Subject: "[Fusebox] " + w.title, Text: text, HTML: html, MessageID: fmt.Sprintf("<%x@fusebox>", []byte(m.ID))}, nil
}

// DownstreamNotice writes the one channel notice of a downstream's change.
func (c DownstreamComposer) DownstreamNotice(ctx context.Context, m alerts.Message) (alerts.Notice, error) {
	w, err := c.words(ctx, m)
	if err != nil {
		return alerts.Notice{}, err
	}
	typ, incident := "downstream.opened", fmt.Sprintf("fusebox/downstream/%s/%d", w.name, m.Episode)
	switch m.Kind {
	case alerts.KindDownstreamResumed:
		typ = "downstream.resumed"
	case alerts.KindDownstreamThrottled:
		typ, incident = "downstream.throttled", fmt.Sprintf("fusebox/downstream/%s/throttled/%d", w.name, m.Episode)
	case alerts.KindPauseAhead:
		typ, incident = "downstream.pause_ahead", fmt.Sprintf("fusebox/downstream/%s/pause-ahead/%d", w.name, m.Episode)
	}
	return alerts.Notice{Type: typ, Title: w.title, Text: w.what, At: c.Now().UTC(),
		Facts:   []alerts.Fact{{Name: "Downstream", Value: w.name}, {Name: "Members", Value: strings.Join(w.members, "; ")}},
		LinkURL: w.link, LinkText: "See it in Fusebox",
		Data:     map[string]any{"downstream": w.name, "members": w.members, "episode": m.Episode, "downstream_url": w.link, "kind": m.Kind},
		Incident: incident}, nil
}

// aheadWords warn of the downstream's pause window opening at m's episode
// (its Unix second): the members whose hub keeps events less long.
func (c DownstreamComposer) aheadWords(ctx context.Context, d downstream.Downstream, m alerts.Message) (downstreamWords, error) {
	opens := time.Unix(m.Episode, 0).UTC()
	p, start, _, ok := circuit.NextOpening(d.PauseWindows, opens.Add(-time.Second))
	if !ok || !start.Equal(opens) {
		return downstreamWords{}, fmt.Errorf("%w: the pause window was changed before the warning could be sent", alerts.ErrPermanent)
	}
	cs, err := c.Circuits.List(ctx)
	if err != nil {
		return downstreamWords{}, err
	}
	w := downstreamWords{name: d.Name, apps: len(d.Apps()), link: strings.TrimRight(c.BaseURL.String(), "/") + "/downstreams/" + url.PathEscape(d.Name)}
	for _, ci := range cs {
		if d.Has(ci.ID()) && ci.HubRetention > 0 && p.Duration >= ci.HubRetention {
			w.members = append(w.members, fmt.Sprintf("%s: its hub keeps events %s", ci.ID(), spoken.Duration(ci.HubRetention)))
		}
	}
	w.title = fmt.Sprintf("%s pauses at %s for %s: waiting events would expire", d.Name, opens.Format("15:04 MST"), spoken.Duration(p.Duration))
	w.what = fmt.Sprintf("The pause window %s of the downstream %s opens at %s and lasts %s, longer than some of its members' hubs keep events: the events waiting when it opens would be gone before they resume. Shorten the window, or resume the downstream early from its page.",
		p, d.Name, opens.Format("Mon 2 Jan 15:04 MST"), spoken.Duration(p.Duration))
	return w, nil
}
