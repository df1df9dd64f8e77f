// Package armswitch turns Azure Functions triggers off and on through Azure
// Resource Manager, by setting AzureWebJobs.<FunctionName>.Disabled in the
// function app's application settings (or a slot's).
//
// ARM has no partial update of app settings and no ETag on them: a write
// replaces the whole set. So every change reads the settings, changes the
// one key, and writes them all back, and writes nothing when the setting is
// already as wanted, because every write restarts the app. Two writers
// racing between read and write can still lose one's change; the
// evaluator's drift check notices a lost trigger change and reports it.
//
// It is kept in its own package because the armappservice module is large:
// only what wires it in pays for compiling it.
package armswitch

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/arm"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/appservice/armappservice/v5"

	"github.com/fusebox/fusebox/internal/circuit"
)

// Settings tune the switch. Zero values take the defaults.
type Settings struct {
	// MaxRetries for 409, 429 and 5xx answers. Default 4.
	MaxRetries int32
	// RetryDelay is the first backoff; it doubles, with jitter, up to
	// MaxRetryDelay. Defaults 1s and 30s.
	RetryDelay, MaxRetryDelay time.Duration
	// Transport replaces the HTTP transport (the SDK's fake servers in tests).
	Transport policy.Transporter
	// HTTPClient calls function hosts' admin APIs. Default: a client with a 30 s timeout.
	HTTPClient *http.Client
}

// Switch is a circuit.Switch for apps in Azure.
type Switch struct {
	cred azcore.TokenCredential
	opts *arm.ClientOptions
	http *http.Client

	mu      sync.Mutex
	clients map[string]*armappservice.WebAppsClient // by subscription
}

var _ circuit.Switch = (*Switch)(nil)

// New builds a switch that authenticates with cred
// (azidentity.DefaultAzureCredential in production).
func New(cred azcore.TokenCredential, s Settings) *Switch {
	if s.MaxRetries == 0 {
		s.MaxRetries = 4
	}
	if s.RetryDelay == 0 {
		s.RetryDelay = time.Second
	}
	if s.MaxRetryDelay == 0 {
		s.MaxRetryDelay = 30 * time.Second
	}
	opts := &arm.ClientOptions{ClientOptions: azcore.ClientOptions{
		Retry: policy.RetryOptions{
			MaxRetries: s.MaxRetries, RetryDelay: s.RetryDelay, MaxRetryDelay: s.MaxRetryDelay,
			// 409: another change to the site is in progress.
			StatusCodes: []int{http.StatusConflict, http.StatusTooManyRequests, http.StatusRequestTimeout,
				http.StatusInternalServerError, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout},
		},
	}}
	if s.Transport != nil {
		opts.Transport = s.Transport
	}
	hc := s.HTTPClient
	if hc == nil {
		hc = &http.Client{Timeout: 30 * time.Second}
	}
	return &Switch{cred: cred, opts: opts, http: hc, clients: map[string]*armappservice.WebAppsClient{}}
}

func (s *Switch) client(app circuit.App) (*armappservice.WebAppsClient, error) {
	if app.SubscriptionID == "" || app.ResourceGroup == "" || app.Site == "" {
		return nil, fmt.Errorf("armswitch: app %s needs a subscription, resource group and site", app.ID)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.clients[app.SubscriptionID]; ok {
		return c, nil
	}
	c, err := armappservice.NewWebAppsClient(app.SubscriptionID, s.cred, s.opts)
	if err != nil {
		return nil, fmt.Errorf("armswitch: %w", err)
	}
	s.clients[app.SubscriptionID] = c
	return c, nil
}

// SettingName is the app setting that disables a function.
func SettingName(function string) string { return "AzureWebJobs." + function + ".Disabled" }

func altSettingName(function string) string { return "AzureWebJobs_" + function + "_Disabled" }

func truthy(v *string) bool {
	return v != nil && (*v == "1" || strings.EqualFold(*v, "true"))
}

func (s *Switch) read(ctx context.Context, app circuit.App) (map[string]*string, error) {
	c, err := s.client(app)
	if err != nil {
		return nil, err
	}
	var props map[string]*string
	if app.Slot == "" {
		resp, err := c.ListApplicationSettings(ctx, app.ResourceGroup, app.Site, nil)
		if err != nil {
			return nil, fmt.Errorf("armswitch: read settings of %s: %w", app.Site, err)
		}
		props = resp.Properties
	} else {
		resp, err := c.ListApplicationSettingsSlot(ctx, app.ResourceGroup, app.Site, app.Slot, nil)
		if err != nil {
			return nil, fmt.Errorf("armswitch: read settings of %s/%s: %w", app.Site, app.Slot, err)
		}
		props = resp.Properties
	}
	if props == nil {
		props = map[string]*string{}
	}
	return props, nil
}

// Disabled returns the functions the app's settings switch off.
func (s *Switch) Disabled(ctx context.Context, app circuit.App) (map[string]bool, error) {
	props, err := s.read(ctx, app)
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for k, v := range props {
		if !truthy(v) {
			continue
		}
		switch {
		case strings.HasPrefix(k, "AzureWebJobs.") && strings.HasSuffix(k, ".Disabled"):
			out[strings.TrimSuffix(strings.TrimPrefix(k, "AzureWebJobs."), ".Disabled")] = true
		case strings.HasPrefix(k, "AzureWebJobs_") && strings.HasSuffix(k, "_Disabled"):
			out[strings.TrimSuffix(strings.TrimPrefix(k, "AzureWebJobs_"), "_Disabled")] = true
		}
	}
	return out, nil
}

// SetDisabled reads the settings, sets or removes the function's setting,
// and writes the whole set back, unless nothing changes.
func (s *Switch) SetDisabled(ctx context.Context, app circuit.App, function string, disabled bool) error {
	if app.Linux && strings.Contains(function, "-") {
		return fmt.Errorf("armswitch: %s contains '-', and Linux plans reject app setting names with '-'", function)
	}
	props, err := s.read(ctx, app)
	if err != nil {
		return err
	}
	key, alt := SettingName(function), altSettingName(function)
	now := truthy(props[key]) || truthy(props[alt])
	if now == disabled {
		return nil // already so: no write, no restart
	}
	delete(props, alt)
	if disabled {
		v := "true"
		props[key] = &v
	} else {
		delete(props, key)
	}
	c, err := s.client(app)
	if err != nil {
		return err
	}
	dict := armappservice.StringDictionary{Properties: props}
	if app.Slot == "" {
		_, err = c.UpdateApplicationSettings(ctx, app.ResourceGroup, app.Site, dict, nil)
	} else {
		_, err = c.UpdateApplicationSettingsSlot(ctx, app.ResourceGroup, app.Site, app.Slot, dict, nil)
	}
	if err != nil {
		return fmt.Errorf("armswitch: write settings of %s: %w", app.Site, err)
	}
	return nil
}

// Functions lists the app's functions by name, so circuits pick real ones.
func (s *Switch) Functions(ctx context.Context, app circuit.App) ([]string, error) {
	c, err := s.client(app)
	if err != nil {
		return nil, err
	}
	var names []string
	add := func(envs []*armappservice.FunctionEnvelope) {
		for _, e := range envs {
			if e == nil || e.Name == nil {
				continue
			}
			// ARM names a function "site/function" (or "site/slot/function").
			n := *e.Name
			if i := strings.LastIndexByte(n, '/'); i >= 0 {
				n = n[i+1:]
			}
			names = append(names, n)
		}
	}
	if app.Slot == "" {
		p := c.NewListFunctionsPager(app.ResourceGroup, app.Site, nil)
		for p.More() {
			page, err := p.NextPage(ctx)
			if err != nil {
				return nil, fmt.Errorf("armswitch: list functions of %s: %w", app.Site, err)
			}
			add(page.Value)
		}
	} else {
		p := c.NewListInstanceFunctionsSlotPager(app.ResourceGroup, app.Site, app.Slot, nil)
		for p.More() {
			page, err := p.NextPage(ctx)
			if err != nil {
				return nil, fmt.Errorf("armswitch: list functions of %s/%s: %w", app.Site, app.Slot, err)
			}
			add(page.Value)
		}
	}
	sort.Strings(names)
	return names, nil
}
