package appservice

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"

	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/egress"
)

// Run starts a function once, now, through the Functions host's admin API
// (POST https://<host>/admin/functions/<name> with the master key), the way
// the portal's Test/Run does. It works for disabled functions too, and for
// timer triggers it is how a missed slot is made up. The host name and the
// master key come from ARM (slot variants for slots).
func (s *Switch) Run(ctx context.Context, app circuit.App, function string) error {
	c, err := s.client(app)
	if err != nil {
		return err
	}
	var host, key string
	if app.Slot == "" {
		site, err := c.Get(ctx, app.ResourceGroup, app.Site, nil)
		if err != nil {
			return describe(app, "read", err)
		}
		if site.Properties != nil && site.Properties.DefaultHostName != nil {
			host = *site.Properties.DefaultHostName
		}
		keys, err := c.ListHostKeys(ctx, app.ResourceGroup, app.Site, nil)
		if err != nil {
			return describe(app, "read the host keys of", err)
		}
		if keys.MasterKey != nil {
			key = *keys.MasterKey
		}
	} else {
		site, err := c.GetSlot(ctx, app.ResourceGroup, app.Site, app.Slot, nil)
		if err != nil {
			return describe(app, "read", err)
		}
		if site.Properties != nil && site.Properties.DefaultHostName != nil {
			host = *site.Properties.DefaultHostName
		}
		keys, err := c.ListHostKeysSlot(ctx, app.ResourceGroup, app.Site, app.Slot, nil)
		if err != nil {
			return describe(app, "read the host keys of", err)
		}
		if keys.MasterKey != nil {
			key = *keys.MasterKey
		}
	}
	if host == "" || key == "" {
		return fmt.Errorf("appservice: %s has no host name or master key to run functions with", app.Site)
	}
	return PostAdmin(ctx, s.http, "https://"+host, function, key)
}

// PostAdmin calls a Functions host's admin API to run one function; 202 is
// success. key may be empty for Core Tools on a developer's machine.
func PostAdmin(ctx context.Context, client *http.Client, base, function, key string) error {
	if client == nil {
		client = http.DefaultClient
	}
	// The request carries the app's master key: a redirect, whoever
	// answers it, is an answer, never a request to repeat with the key.
	noRedirect := *client
	noRedirect.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	client = &noRedirect
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/admin/functions/"+url.PathEscape(function), bytes.NewReader([]byte(`{"input": ""}`)))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("x-functions-key", key)
	}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("appservice: run %s: %s", function, egress.Class(err))
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1024))
	// What the host said is not repeated: it can carry anything.
	if resp.StatusCode != http.StatusAccepted {
		return fmt.Errorf("appservice: run %s: the host answered %d", function, resp.StatusCode)
	}
	return nil
}
