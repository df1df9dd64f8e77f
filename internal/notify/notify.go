// Package notify posts alerts to Microsoft Teams (Workflows webhooks with
// an Adaptive Card), Slack (incoming webhooks with Block Kit), generic
// webhooks signed per the Standard Webhooks specification, PagerDuty
// (Events API v2) and Opsgenie (Alert API): the HTTP adapters behind
// alerts.Poster.
//
// Channel URLs are secrets: no error, log line or span carries one. A
// receiver gets 5 seconds and at most 64 KiB of its answer is read, and
// none of it is kept: errors say the status, never the body. 2xx is
// delivered; 408, 429, 5xx and connection trouble are worth another try
// (429 and 503 with Retry-After say when); any other answer refuses this
// message for good.
package notify

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/fusebox/fusebox/internal/alerts"
	"github.com/fusebox/fusebox/internal/egress"
)

// Poster posts to channels over HTTP.
type Poster struct {
	// Client makes the requests; nil: Egress's client with Timeout. Give
	// it an egress.Policy's Client, which follows no redirect and refuses
	// addresses inside the network.
	Client *http.Client
	// Egress is the policy of a client made per request when Client is nil;
	// its zero value refuses every address inside the network.
	Egress egress.Policy
	// Timeout bounds one request; default 5s.
	Timeout time.Duration
	// Now is the clock of webhook timestamps; nil: time.Now.
	Now func() time.Time
}

// MaxAnswer is how much of a receiver's answer is read.
const MaxAnswer = 64 << 10

// MaxRetryAfter caps how long a receiver may ask to be left alone.
const MaxRetryAfter = time.Hour

func (p Poster) client() *http.Client {
	if p.Client != nil {
		return p.Client
	}
	return p.Egress.Client(p.timeout())
}

func (p Poster) timeout() time.Duration {
	if p.Timeout > 0 {
		return p.Timeout
	}
	return 5 * time.Second
}

func (p Poster) now() time.Time {
	if p.Now != nil {
		return p.Now()
	}
	return time.Now()
}

// Post delivers n to ch.
func (p Poster) Post(ctx context.Context, ch alerts.Channel, id string, n alerts.Notice) error {
	var (
		body []byte
		err  error
		hdr  = http.Header{"Content-Type": {"application/json"}}
		to   = ch.URL
	)
	switch ch.Kind {
	case alerts.ChannelTeams:
		body, err = json.Marshal(TeamsMessage(n))
	case alerts.ChannelSlack:
		body, err = json.Marshal(SlackMessage(n))
	case alerts.ChannelWebhook:
		body, err = json.Marshal(WebhookEvent(n))
		if err == nil {
			err = Sign(hdr, ch.Secrets(p.now()), WebhookID(id), p.now(), body)
		}
	case alerts.ChannelPagerDuty, alerts.ChannelOpsgenie:
		var v any
		if to, hdr, v, err = onCallRequest(ch, n); err == nil {
			body, err = json.Marshal(v)
		}
	default:
		return fmt.Errorf("%w: channel %s: kind %q is not posted over HTTP", alerts.ErrPermanent, ch.ID, ch.Kind)
	}
	if err != nil {
		return fmt.Errorf("%w: channel %s: %v", alerts.ErrPermanent, ch.ID, err)
	}
	return p.send(ctx, ch, to, hdr, body)
}

// send posts body to the URL to, a channel's own (or, for Opsgenie, made
// from its base).
func (p Poster) send(ctx context.Context, ch alerts.Channel, to string, hdr http.Header, body []byte) error {
	ctx, cancel := context.WithTimeout(ctx, p.timeout())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, to, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("%w: channel %s: its URL does not make a request", alerts.ErrPermanent, ch.ID)
	}
	req.Header = hdr
	req.Header.Set("User-Agent", "Fusebox")
	resp, err := p.client().Do(req)
	if err != nil {
		// url.Error carries the URL, which is the secret: keep only the cause.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		if ctx.Err() != nil {
			return fmt.Errorf("notify: %s: no answer within %s", ch.MaskedURL(), p.timeout())
		}
		if errors.Is(err, egress.ErrRefused) {
			// An address inside Fusebox's network will not change by
			// trying again.
			return fmt.Errorf("%w: notify: %s: %s", alerts.ErrPermanent, ch.MaskedURL(), egress.Class(err))
		}
		return fmt.Errorf("notify: %s: %s", ch.MaskedURL(), egress.Class(err))
	}
	defer resp.Body.Close()
	// The answer is read (so the connection can be reused) and dropped:
	// what a receiver says is no one's business on Fusebox's pages.
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, MaxAnswer))
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return nil
	}
	msg := fmt.Errorf("notify: %s answered HTTP %d", ch.MaskedURL(), resp.StatusCode)
	switch {
	case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable:
		if d, ok := parseRetryAfter(resp.Header.Get("Retry-After"), p.now()); ok {
			return &alerts.RetryAfterError{After: d, Err: msg}
		}
		return msg
	case resp.StatusCode == http.StatusRequestTimeout || resp.StatusCode >= 500:
		return msg
	}
	return fmt.Errorf("%w: %v", alerts.ErrPermanent, msg)
}

// parseRetryAfter reads seconds or an HTTP date, capped at MaxRetryAfter.
func parseRetryAfter(v string, now time.Time) (time.Duration, bool) {
	if v == "" {
		return 0, false
	}
	if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && n >= 0 {
		return min(time.Duration(n)*time.Second, MaxRetryAfter), true
	}
	if t, err := http.ParseTime(v); err == nil {
		return min(max(t.Sub(now), 0), MaxRetryAfter), true
	}
	return 0, false
}

// WebhookID is the webhook-id of a message: the same on every retry of
// it, and free of the names in the outbox id.
func WebhookID(messageID string) string {
	sum := sha256.Sum256([]byte(messageID))
	return "msg_" + base64.RawURLEncoding.EncodeToString(sum[:18])
}

// Sign sets the Standard Webhooks headers: webhook-id, webhook-timestamp
// and webhook-signature, with one "v1,<base64 HMAC-SHA256>" of
// "id.timestamp.body" per secret (several during a rotation).
func Sign(h http.Header, secrets []string, id string, at time.Time, body []byte) error {
	ts := strconv.FormatInt(at.Unix(), 10)
	var sigs []string
	for _, s := range secrets {
		key, err := alerts.SecretKey(s)
		if err != nil {
			return err
		}
		m := hmac.New(sha256.New, key)
		m.Write([]byte(id + "." + ts + "."))
		m.Write(body)
		sigs = append(sigs, "v1,"+base64.StdEncoding.EncodeToString(m.Sum(nil)))
	}
	h.Set("webhook-id", id)
	h.Set("webhook-timestamp", ts)
	h.Set("webhook-signature", strings.Join(sigs, " "))
	return nil
}
