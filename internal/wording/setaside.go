package wording

import (
	"context"
	"fmt"
	"html/template"
	"net/url"
	"strings"
	"time"

	"github.com/fusebox/fusebox/internal/alerts"
	"github.com/fusebox/fusebox/internal/setaside"
	"github.com/fusebox/fusebox/internal/views"
)

// SetAsideComposer writes what Fusebox says when an app's poison or
// parking queue starts holding work, or grows fast. It says what it last
// saw of the queue (a count and an age), never a message's body: bodies
// are others' data and stay behind sign-in.
type SetAsideComposer struct {
	Kept interface {
		OfApp(ctx context.Context, appID string) (setaside.AppSetAside, error)
	}
	BaseURL *url.URL
	Now     func() time.Time
}

type setAsideWords struct {
	app, queue, title, what, link string
	count, growth                 int
	oldest                        string
}

func (c SetAsideComposer) words(ctx context.Context, m alerts.Message) (setAsideWords, error) {
	appID, queue, ok := alerts.SetAsideOf(m.Circuit)
	if !ok {
		return setAsideWords{}, fmt.Errorf("%w: %q names no app and queue", alerts.ErrPermanent, m.Circuit)
	}
	kept, err := c.Kept.OfApp(ctx, appID)
	if err != nil {
		return setAsideWords{}, err // storage: try again
	}
	w := setAsideWords{app: appID, queue: queue,
		link: strings.TrimRight(c.BaseURL.String(), "/") + "/apps/" + url.PathEscape(appID) + "/queues/" + url.PathEscape(queue)}
	var q setaside.Kept
	for _, k := range kept.Queues {
		if k.Name == queue {
			q = k
		}
	}
	now := c.Now()
	w.count, w.growth, w.oldest = q.Count, q.Growth(now), "none"
	if !q.Oldest.IsZero() {
		w.oldest = views.Ago(now, q.Oldest)
	}
	why := "the function's code parked them"
	switch q.Kind {
	case setaside.Poison:
		why = "the queue trigger gave up on them after its retries"
	case setaside.BlobPoison:
		why = "the blob trigger gave up on these blobs after its retries"
	}
	of := ""
	if q.Function != "" {
		of = " (" + q.Function + ")"
	}
	switch m.Kind {
	case alerts.KindSetAsideExpiring:
		left := "soon"
		if !q.Expires.IsZero() {
			left = "at " + q.Expires.UTC().Format("Mon 2 Jan 15:04 MST")
		}
		w.title = fmt.Sprintf("%s in %s: its oldest message expires %s", queue, appID, left)
		w.what = fmt.Sprintf("%s%s in %s holds %d messages: %s. The oldest expires %s, and the queue then drops it for good. Send them back to work before then, once the cause is fixed.", queue, of, appID, q.Count, why, left)
	case alerts.KindSetAsideGrew:
		w.title = fmt.Sprintf("%s in %s grew by %d in an hour", queue, appID, w.growth)
		w.what = fmt.Sprintf("%s%s in %s holds %d messages, %d more than an hour ago: %s.", queue, of, appID, q.Count, w.growth, why)
	default:
		w.title = fmt.Sprintf("%s in %s holds work set aside", queue, appID)
		w.what = fmt.Sprintf("%s%s in %s went from empty to %d messages: %s. Nothing processes them until someone sends them back.", queue, of, appID, q.Count, why)
	}
	return w, nil
}

// ComposeSetAside writes one mail about a set-aside queue.
func (c SetAsideComposer) ComposeSetAside(ctx context.Context, m alerts.Message) (alerts.Mail, error) {
	w, err := c.words(ctx, m)
	if err != nil {
		return alerts.Mail{}, err
	}
	text := fmt.Sprintf("%s\n\nMessages: %d (oldest %s)\n\nSee them, and send them back to work once the cause is fixed:\n\n  %s\n", w.what, w.count, w.oldest, w.link)
	html := fmt.Sprintf(`<!DOCTYPE html><html lang="en"><body style="font-family: system-ui, sans-serif; color: #1d2330; max-width: 36rem;"><h1 style="font-size: 1.3rem;">%s</h1><p>%s</p><p>Messages: %d (oldest %s)</p><p><a href="%s">See them, and send them back to work</a></p></body></html>`,
		template.HTMLEscapeString(w.title), template.HTMLEscapeString(w.what), w.count, template.HTMLEscapeString(w.oldest), template.HTMLEscapeString(w.link))
	return alerts.Mail{To: []string{m.To}, Subject: "[Fusebox] " + w.title, Text: text, HTML: html, MessageID: fmt.Sprintf("<%x@fusebox>", []byte(m.ID))}, nil
}

// SetAsideNotice writes one notice about a set-aside queue for a channel.
func (c SetAsideComposer) SetAsideNotice(ctx context.Context, m alerts.Message) (alerts.Notice, error) {
	w, err := c.words(ctx, m)
	if err != nil {
		return alerts.Notice{}, err
	}
	typ := "setaside.appeared"
	switch m.Kind {
	case alerts.KindSetAsideGrew:
		typ = "setaside.grew"
	case alerts.KindSetAsideExpiring:
		typ = "setaside.expiring"
	}
	return alerts.Notice{Type: typ, Title: w.title, Text: w.what, At: c.Now().UTC(),
		Facts:   []alerts.Fact{{Name: "App", Value: w.app}, {Name: "Queue", Value: w.queue}, {Name: "Messages", Value: fmt.Sprint(w.count)}, {Name: "Oldest", Value: w.oldest}},
		LinkURL: w.link, LinkText: "See them in Fusebox",
		Data:     map[string]any{"app": w.app, "queue": w.queue, "count": w.count, "grew_in_hour": w.growth, "episode": m.Episode, "queue_url": w.link, "kind": m.Kind},
		Incident: "fusebox/setaside/" + w.app + "/" + w.queue}, nil
}
