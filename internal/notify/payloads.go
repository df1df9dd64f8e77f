package notify

import (
	"strings"
	"time"

	"github.com/fusebox/fusebox/internal/alerts"
)

// TeamsMessage is what a Teams Workflows "when a webhook request is
// received" flow posts to a channel: a message with one Adaptive Card
// (version 1.4, which Teams renders everywhere). Its only action opens
// the review page; nothing in it acts on GET.
func TeamsMessage(n alerts.Notice) map[string]any {
	facts := make([]map[string]any, 0, len(n.Facts))
	for _, f := range n.Facts {
		facts = append(facts, map[string]any{"title": f.Name, "value": f.Value})
	}
	card := map[string]any{
		"$schema": "http://adaptivecards.io/schemas/adaptive-card.json",
		"type":    "AdaptiveCard",
		"version": "1.4",
		"body": []map[string]any{
			{"type": "TextBlock", "text": n.Title, "weight": "Bolder", "size": "Medium", "wrap": true},
			{"type": "TextBlock", "text": n.Text, "wrap": true},
			{"type": "FactSet", "facts": facts},
		},
		"actions": []map[string]any{{"type": "Action.OpenUrl", "title": n.LinkText, "url": n.LinkURL}},
	}
	return map[string]any{
		"type": "message",
		"attachments": []map[string]any{{
			"contentType": "application/vnd.microsoft.card.adaptive",
			"contentUrl":  nil,
			"content":     card,
		}},
	}
}

// SlackMessage is a Block Kit message with a plain fallback text (what
// notifications and old clients show), the facts, and a button to the
// review page.
func SlackMessage(n alerts.Notice) map[string]any {
	fields := make([]map[string]any, 0, len(n.Facts))
	for _, f := range n.Facts {
		if len(fields) == 10 { // Block Kit's limit per section
			break
		}
		fields = append(fields, map[string]any{"type": "mrkdwn", "text": "*" + slackEscape(f.Name) + "*\n" + clip(slackEscape(f.Value), 1900)})
	}
	return map[string]any{
		"text": n.Title + ": " + n.Text + " " + n.LinkURL,
		"blocks": []map[string]any{
			{"type": "header", "text": map[string]any{"type": "plain_text", "text": clip(n.Title, 150)}},
			{"type": "section", "text": map[string]any{"type": "mrkdwn", "text": clip(slackEscape(n.Text), 2900)}},
			{"type": "section", "fields": fields},
			{"type": "actions", "elements": []map[string]any{{
				"type": "button", "text": map[string]any{"type": "plain_text", "text": n.LinkText}, "url": n.LinkURL,
			}}},
		},
	}
}

// slackEscape escapes the three characters Slack's mrkdwn reads as markup.
func slackEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

func clip(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// Event is the body of a generic webhook: {type, timestamp, data}.
type Event struct {
	Type      string         `json:"type"`
	Timestamp time.Time      `json:"timestamp"`
	Data      map[string]any `json:"data"`
}

// WebhookEvent turns a notice into the webhook body; data carries the
// event's fields and the words a person would read.
func WebhookEvent(n alerts.Notice) Event {
	data := map[string]any{}
	for k, v := range n.Data {
		data[k] = v
	}
	data["title"], data["text"], data["url"] = n.Title, n.Text, n.LinkURL
	return Event{Type: n.Type, Timestamp: n.At.UTC(), Data: data}
}
