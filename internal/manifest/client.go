package manifest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/fusebox/fusebox/internal/alerts"
	"github.com/fusebox/fusebox/internal/apiwire"
	"github.com/fusebox/fusebox/internal/jobs"
	"github.com/fusebox/fusebox/internal/teams"
)

// Client reads and changes a Fusebox through its HTTP API, with an API
// token (FUSEBOX_API_TOKENS): a viewer's to export, an operator's to apply.
type Client struct {
	Base  string // such as https://fusebox.example.com
	Token string
	HTTP  *http.Client
}

// maxAnswer bounds what one answer may cost: every circuit of a large
// fleet fits in far less.
const maxAnswer = 64 << 20

// APIError is a refusal by Fusebox: its status, message and fields.
type APIError struct {
	Status  int
	Message string
	Fields  map[string]string
}

func (e *APIError) Error() string {
	s := fmt.Sprintf("Fusebox answered %d", e.Status)
	if e.Message != "" {
		s += ": " + e.Message
	}
	for f, m := range e.Fields {
		s += fmt.Sprintf("; %s: %s", f, m)
	}
	return s
}

func (c *Client) call(ctx context.Context, method, path string, body, into any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimSuffix(c.Base, "/")+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+c.Token)
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer+1))
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	if len(b) > maxAnswer {
		return fmt.Errorf("%s %s: the answer is larger than %d bytes", method, path, maxAnswer)
	}
	if resp.StatusCode >= 300 {
		e := &APIError{Status: resp.StatusCode}
		var m struct {
			Error, Message string
			Fields         map[string]string
		}
		if json.Unmarshal(b, &m) == nil {
			e.Message, e.Fields = m.Error+m.Message, m.Fields
		}
		return e
	}
	if into != nil && len(b) > 0 {
		if err := json.Unmarshal(b, into); err != nil {
			return fmt.Errorf("%s %s: the answer does not read: %w", method, path, err)
		}
	}
	return nil
}

// SecretVar is the variable a file names for an entry's secret, such as
// FUSEBOX_APP_ORDERS_PROD_HOST_STORAGE.
func SecretVar(kind, id, what string) string {
	up := strings.ToUpper(strings.NewReplacer("-", "_", ".", "_").Replace(id))
	return "FUSEBOX_" + strings.ToUpper(kind) + "_" + up + "_" + what
}

// Current reads what Fusebox holds, as a file would say it: Fusebox's
// own loops' jobs and ended windows are left out; secrets are named by
// the variables SecretVar makes.
func (c *Client) Current(ctx context.Context) (Doc, error) {
	doc := Doc{Version: Version}
	if err := c.call(ctx, http.MethodGet, "/api/v1/me", nil, &doc.Caller); err != nil {
		return Doc{}, err
	}
	var apps []apiwire.App
	if err := c.call(ctx, http.MethodGet, "/api/v1/apps", nil, &apps); err != nil {
		return Doc{}, err
	}
	for _, a := range apps {
		x := App{ID: a.ID, Team: a.Team, DisplayName: a.DisplayName, Switch: a.Switch, Subscription: a.Subscription, ResourceGroup: a.ResourceGroup,
			Site: a.Site, Slot: a.Slot, LocalSettings: a.LocalSettings, Linux: a.Linux, GuardrailMax: a.GuardrailMax,
			GuardrailShare: a.GuardrailShare, HostID: a.HostID, InsightsAppID: a.InsightsAppID, SetAsideLimit: a.SetAsideLimit, ResumeFrom: a.ResumeFrom, Channels: a.Channels,
			EscalateTo: a.EscalateTo, EscalateAfter: seconds(a.EscalateAfter)}
		if a.HostStorageSet {
			x.HostStorageEnv = SecretVar("app", a.ID, "HOST_STORAGE")
		}
		if a.EventHubsSet {
			x.EventHubsEnv = SecretVar("app", a.ID, "EVENT_HUBS")
		}
		doc.Apps = append(doc.Apps, x)
	}
	var chs struct{ Channels []apiwire.Channel }
	if err := c.call(ctx, http.MethodGet, "/api/v1/channels", nil, &chs); err != nil {
		return Doc{}, err
	}
	for _, ch := range chs.Channels {
		if ch.Team == "" && !doc.Caller.Admin() {
			doc.Shared = append(doc.Shared, ch.ID) // named, never held: an admin's
			continue
		}
		x := Channel{ID: ch.ID, Name: ch.Name, Kind: ch.Kind, Addresses: ch.Addresses, Team: ch.Team}
		if ch.Kind != "mail" {
			x.URLEnv = SecretVar("channel", ch.ID, "URL")
		}
		if alerts.OnCall(ch.Kind) {
			x.KeyEnv = SecretVar("channel", ch.ID, "KEY")
		}
		doc.Channels = append(doc.Channels, x)
	}
	var cs struct{ Circuits []apiwire.Circuit }
	if err := c.call(ctx, http.MethodGet, "/api/v1/circuits", nil, &cs); err != nil {
		return Doc{}, err
	}
	for _, ci := range cs.Circuits {
		doc.Circuits = append(doc.Circuits, circuitOf(ci.App, ci.Function, ci.Settings()))
	}
	var js struct{ Jobs []apiwire.Job }
	if err := c.call(ctx, http.MethodGet, "/api/v1/jobs", nil, &js); err != nil {
		return Doc{}, err
	}
	for _, j := range js.Jobs {
		if jobs.InternalID(j.ID) {
			continue
		}
		doc.Jobs = append(doc.Jobs, Job{ID: j.ID, Team: j.Team, Name: j.Name, Slug: j.Slug, App: j.App, Function: j.Function, Schedule: j.Schedule,
			TimeZone: j.TimeZone, Grace: seconds(j.GraceSeconds), MaxDuration: seconds(j.MaxDurationSeconds), MinDuration: seconds(j.MinDurationSeconds),
			FailAfter: j.FailAfter, RecoverAfter: j.RecoverAfter, Recipients: j.Recipients, Channels: j.Channels, Tags: j.Tags,
			Misfire: j.Misfire, Paused: j.Paused})
	}
	var ws struct{ Windows []apiwire.Window }
	if err := c.call(ctx, http.MethodGet, "/api/v1/maintenance", nil, &ws); err != nil {
		return Doc{}, err
	}
	for _, w := range ws.Windows {
		if w.State == "ended" {
			continue
		}
		doc.Maintenance = append(doc.Maintenance, Window{ID: w.ID, App: w.App, From: w.From.UTC(), Until: w.Until.UTC(), Reason: w.Reason,
			Recurs: w.Recurs, TimeZone: w.TimeZone, Duration: seconds(w.DurationSeconds)})
	}
	if doc.Caller.Admin() {
		var ts struct {
			Teams []struct {
				Name             string
				Scopes           []string
				ConfiguredScopes []string `json:"configured_scopes"`
			}
		}
		if err := c.call(ctx, http.MethodGet, "/api/v1/teams", nil, &ts); err != nil {
			return Doc{}, err
		}
		for _, t := range ts.Teams {
			x := Team{Name: t.Name, Scopes: []string{}}
			for _, s := range t.Scopes {
				if !slices.Contains(t.ConfiguredScopes, s) {
					x.Scopes = append(x.Scopes, s)
				}
			}
			doc.Teams = append(doc.Teams, x)
		}
	}
	doc.Normalize()
	return doc, nil
}

func seconds(n int) Duration { return Duration(time.Duration(n) * time.Second) }

// Normalize writes defaults one way, so that a file and Fusebox compare
// equal when they mean the same: a job's zone UTC when none is given, one
// run in a row (fail_after, recover_after) as no number.
func (d *Doc) Normalize() {
	for i := range d.Teams {
		// Scopes as ARM writes them, so that case and spelling compare
		// equal; one that does not read is left for Check to name.
		if ss, err := teams.ParseScopes(strings.Join(d.Teams[i].Scopes, "\n")); err == nil {
			d.Teams[i].Scopes = strings.Fields(teams.FormatScopes(ss))
		}
	}
	for i := range d.Jobs {
		j := &d.Jobs[i]
		if j.TimeZone == "" {
			j.TimeZone = "UTC"
		}
		if j.FailAfter == 1 {
			j.FailAfter = 0
		}
		if j.RecoverAfter == 1 {
			j.RecoverAfter = 0
		}
	}
}

// Apply makes each change in order and tells out of each as it is made.
// It stops at the first refusal: what came before it stays made, and the
// error names the change and its line.
func (c *Client) Apply(ctx context.Context, changes []Change, env Env, out io.Writer) error {
	secret := func(name string) string {
		if name == "" {
			return ""
		}
		v, _ := env(name)
		return v
	}
	for _, ch := range changes {
		if err := c.apply(ctx, ch, secret, out); err != nil {
			where := ""
			if ch.Line > 0 {
				where = fmt.Sprintf(" (line %d)", ch.Line)
			}
			var ae *APIError
			if errors.As(err, &ae) && ae.Status == http.StatusConflict && ch.Action == Delete && ch.Kind == "circuit" {
				err = fmt.Errorf("%w (a circuit that is not closed is deleted only once it is resumed)", err)
			}
			return fmt.Errorf("%s %s %s%s: %w; the changes before it were made", ch.Action, ch.Kind, ch.Name, where, err)
		}
		fmt.Fprintln(out, ch.String())
	}
	return nil
}

func (c *Client) apply(ctx context.Context, ch Change, secret func(string) string, out io.Writer) error {
	esc := url.PathEscape
	switch {
	case ch.Channel != nil:
		x := ch.Channel
		body := apiwire.ChannelInput{ID: x.ID, Name: x.Name, Kind: x.Kind, Addresses: x.Addresses, URL: secret(x.URLEnv), Key: secret(x.KeyEnv), Team: x.Team}
		switch ch.Action {
		case Create:
			return c.call(ctx, http.MethodPost, "/api/v1/channels", body, nil)
		case Update:
			return c.call(ctx, http.MethodPut, "/api/v1/channels/"+esc(x.ID), body, nil)
		case Delete:
			return c.call(ctx, http.MethodDelete, "/api/v1/channels/"+esc(x.ID), nil, nil)
		}
	case ch.App != nil:
		x := ch.App
		body := apiwire.AppInput{App: apiwire.App{ID: x.ID, Team: x.Team, DisplayName: x.DisplayName, Switch: x.Switch, Subscription: x.Subscription, ResourceGroup: x.ResourceGroup,
			Site: x.Site, Slot: x.Slot, LocalSettings: x.LocalSettings, Linux: x.Linux, GuardrailMax: x.GuardrailMax, GuardrailShare: x.GuardrailShare,
			HostID: x.HostID, InsightsAppID: x.InsightsAppID, SetAsideLimit: x.SetAsideLimit, ResumeFrom: x.ResumeFrom, Channels: nonNil(x.Channels),
			EscalateTo: nonNil(x.EscalateTo), EscalateAfter: int(time.Duration(x.EscalateAfter) / time.Second)}, HostStorage: secret(x.HostStorageEnv), EventHubs: secret(x.EventHubsEnv)}
		switch ch.Action {
		case Create:
			var reg struct{ Key string }
			if err := c.call(ctx, http.MethodPost, "/api/v1/apps", body, &reg); err != nil {
				return err
			}
			// The key is shown once, as the Register page shows it.
			fmt.Fprintf(out, "  the failure-reporting key of %s, shown once: %s\n", x.ID, reg.Key)
			return nil
		case Update:
			return c.call(ctx, http.MethodPut, "/api/v1/apps/"+esc(x.ID), body, nil)
		}
	case ch.Circuit != nil:
		x := ch.Circuit
		d := x.domain()
		body := apiwire.NewCircuitSettings(d.AppID, d.Function, d.Settings)
		path := "/api/v1/circuits/" + esc(x.App) + "/" + esc(x.Function)
		switch ch.Action {
		case Create:
			return c.call(ctx, http.MethodPost, "/api/v1/circuits", body, nil)
		case Update:
			return c.call(ctx, http.MethodPut, path, body, nil)
		case Delete:
			return c.call(ctx, http.MethodDelete, path, nil, nil)
		}
	case ch.Job != nil:
		x := ch.Job
		body := apiwire.JobInput{Team: x.Team, Name: x.Name, Slug: x.Slug, App: x.App, Function: x.Function, Schedule: x.Schedule, TimeZone: x.TimeZone,
			Grace: x.Grace.String(), MaxDuration: optional(x.MaxDuration), MinDuration: optional(x.MinDuration), FailAfter: count(x.FailAfter),
			RecoverAfter: count(x.RecoverAfter), Recipients: nonNil(x.Recipients), Channels: nonNil(x.Channels), Tags: nonNil(x.Tags), Misfire: x.Misfire, Paused: x.Paused}
		switch ch.Action {
		case Create:
			return c.call(ctx, http.MethodPost, "/api/v1/jobs", body, nil)
		case Update:
			return c.call(ctx, http.MethodPut, "/api/v1/jobs/"+esc(x.ID), body, nil)
		case Delete:
			return c.call(ctx, http.MethodDelete, "/api/v1/jobs/"+esc(x.ID), nil, nil)
		}
	case ch.Team != nil && ch.Action != Delete:
		x := ch.Team
		// Scopes alone: Fusebox keeps the members and channels as they
		// are then, not as this file read them a moment ago.
		body := struct {
			Scopes []string `json:"scopes"`
		}{Scopes: nonNil(x.Scopes)}
		return c.call(ctx, http.MethodPut, "/api/v1/teams/"+esc(x.Name), body, nil)
	case ch.Window != nil:
		x := ch.Window
		switch ch.Action {
		case Create:
			body := apiwire.WindowInput{App: x.App, From: x.From, Until: x.Until, Reason: x.Reason, Recurs: x.Recurs, TimeZone: x.TimeZone}
			if x.Recurs != "" {
				body.Duration = x.Duration.String()
			}
			return c.call(ctx, http.MethodPost, "/api/v1/maintenance", body, nil)
		case End:
			return c.call(ctx, http.MethodPost, "/api/v1/maintenance/"+esc(x.ID)+"/end", nil, nil)
		}
	}
	return fmt.Errorf("manifest: no way to %s a %s", ch.Action, ch.Kind)
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func optional(d Duration) string {
	if d == 0 {
		return ""
	}
	return d.String()
}

func count(n int) *int {
	if n == 0 {
		return nil
	}
	return &n
}
