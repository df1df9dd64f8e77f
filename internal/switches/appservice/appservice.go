// Package appservice turns Azure Functions triggers off and on through Azure
// Resource Manager, by setting AzureWebJobs.<FunctionName>.Disabled in the
// function app's application settings (or a slot's).
//
// ARM has no partial update of app settings and no ETag on them: a write
// replaces the whole set, and every write restarts the app. So Apply reads
// the settings, changes only the keys it was asked to, writes them all back
// in one write (one restart however many functions change), and writes
// nothing when they are already as wanted. A write is never replayed: after
// a 409, a throttle or a time-out, the next try reads again and merges
// again, so a change someone made meanwhile (a deploy, a key rotation)
// survives. After writing it reads back and checks that its keys hold.
// What is not guaranteed: a writer that read before Fusebox wrote and
// writes after it can still undo Fusebox's change; the read-back or the
// evaluator's drift check sees that.
//
// For a slot, the Disabled settings are made slot-sticky first, so a swap
// does not carry a switched-off trigger to production.
//
// It is kept in its own package because the armappservice module is large:
// only what wires it in pays for compiling it.
package appservice

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/arm"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/tracing"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/appservice/armappservice/v5"

	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/switches/armwrite"
	"github.com/fusebox/fusebox/internal/trigger"
)

// Settings tune the switch. Zero values take the defaults.
type Settings struct {
	// Policy bounds one Apply: attempts, each reading and merging afresh,
	// a time-out per request, and the backoff between attempts (a
	// Retry-After header is not honoured beyond MaxRetryDelay). The
	// caller's context bounds the whole call.
	armwrite.Policy
	// Transport replaces the HTTP transport (the SDK's fake servers in tests).
	Transport policy.Transporter
	// Tracing, when set, makes every ARM call a span of the caller's trace.
	Tracing tracing.Provider
	// HTTPClient calls function hosts' admin APIs. Default: a client with a 30 s timeout.
	HTTPClient *http.Client
}

// Switch is a circuit.Switch for apps in Azure.
type Switch struct {
	cred azcore.TokenCredential
	opts *arm.ClientOptions
	http *http.Client
	s    Settings

	clients armwrite.Clients[armappservice.WebAppsClient]
}

var _ circuit.Switch = (*Switch)(nil)

// New builds a switch that authenticates with cred
// (azidentity.DefaultAzureCredential in production).
func New(cred azcore.TokenCredential, s Settings) *Switch {
	s.Policy = s.Policy.WithDefaults()
	opts := s.ClientOptions(s.Transport, s.Tracing)
	hc := s.HTTPClient
	if hc == nil {
		hc = &http.Client{Timeout: 30 * time.Second}
	}
	sw := &Switch{cred: cred, opts: opts, http: hc, s: s}
	sw.clients.Package, sw.clients.Resource = "appservice", "site"
	sw.clients.New = func(sub string) (*armappservice.WebAppsClient, error) {
		return armappservice.NewWebAppsClient(sub, cred, opts)
	}
	return sw
}

func (s *Switch) client(app circuit.App) (*armappservice.WebAppsClient, error) {
	return s.clients.For(app)
}

func truthy(v *string) bool { return v != nil && trigger.Truthy(*v) }

func siteName(app circuit.App) string {
	if app.Slot != "" {
		return app.Site + "/" + app.Slot
	}
	return app.Site
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
			return nil, describe(app, "read the settings of", err)
		}
		props = resp.Properties
	} else {
		resp, err := c.ListApplicationSettingsSlot(ctx, app.ResourceGroup, app.Site, app.Slot, nil)
		if err != nil {
			return nil, describe(app, "read the settings of", err)
		}
		props = resp.Properties
	}
	if props == nil {
		props = map[string]*string{}
	}
	return props, nil
}

func (s *Switch) write(ctx context.Context, app circuit.App, props map[string]*string) error {
	c, err := s.client(app)
	if err != nil {
		return err
	}
	dict := armappservice.StringDictionary{Properties: props}
	if app.Slot == "" {
		_, err = c.UpdateApplicationSettings(s.s.Once(ctx), app.ResourceGroup, app.Site, dict, nil)
	} else {
		_, err = c.UpdateApplicationSettingsSlot(s.s.Once(ctx), app.ResourceGroup, app.Site, app.Slot, dict, nil)
	}
	if err != nil {
		return describe(app, "write the settings of", err)
	}
	return nil
}

// Disabled returns the functions the app's settings switch off.
func (s *Switch) Disabled(ctx context.Context, app circuit.App) (map[string]bool, error) {
	props, err := s.read(ctx, app)
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for k, v := range props {
		if f, ok := trigger.FunctionOf(k); ok && truthy(v) {
			out[f] = true
		}
	}
	return out, nil
}

// merge returns the settings with each function switched as off says, and
// whether that changes anything.
func merge(props map[string]*string, off map[string]bool) (map[string]*string, bool) {
	next := maps.Clone(props)
	changed := false
	for f, disabled := range off {
		key, alt := trigger.Setting(f), trigger.AltSetting(f)
		now := truthy(props[key]) || truthy(props[alt])
		if now == disabled {
			continue // already so: no write, no restart
		}
		changed = true
		delete(next, alt)
		if disabled {
			v := "true"
			next[key] = &v
		} else {
			delete(next, key)
		}
	}
	return next, changed
}

// holds reports whether props switch every function as off says.
func holds(props map[string]*string, off map[string]bool) bool {
	for f, disabled := range off {
		if (truthy(props[trigger.Setting(f)]) || truthy(props[trigger.AltSetting(f)])) != disabled {
			return false
		}
	}
	return true
}

// Apply switches each function in off in one write of the app's settings.
func (s *Switch) Apply(ctx context.Context, app circuit.App, off map[string]bool) error {
	return s.Tune(ctx, app, off, nil)
}

// Settings reads the app's settings (for a throttle's plan).
func (s *Switch) Settings(ctx context.Context, app circuit.App) (map[string]string, error) {
	props, err := s.read(ctx, app)
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(props))
	for k, v := range props {
		if v != nil {
			out[k] = *v
		}
	}
	return out, nil
}

// Tune switches each function in off and sets each setting in set (nil:
// removes it) in the same one write of the app's settings: a throttle and
// a trip of one app cost one restart.
func (s *Switch) Tune(ctx context.Context, app circuit.App, off map[string]bool, set map[string]*string) error {
	for f := range off {
		if err := trigger.CheckSettable(f, app.Linux); err != nil {
			return fmt.Errorf("appservice: %w", err)
		}
	}
	if app.Slot != "" {
		// A throttle's settings stay with the slot too: a swap must not
		// carry lowered concurrency to production.
		if err := s.makeSticky(ctx, app, off, slices.Sorted(maps.Keys(set))); err != nil {
			return err
		}
	}
	return armwrite.Apply(ctx, s.s.Policy, armwrite.Change[map[string]*string]{
		Read: func(ctx context.Context) (map[string]*string, error) { return s.read(ctx, app) },
		Merge: func(props map[string]*string) (map[string]*string, bool, error) {
			next, changed := merge(props, off)
			next, tuned := armwrite.Set(next, set)
			return next, changed || tuned, nil
		},
		Write: func(ctx context.Context, next map[string]*string) error { return s.write(ctx, app, next) },
		Holds: func(after map[string]*string) (bool, error) {
			return holds(after, off) && armwrite.HoldsSet(after, set), nil
		},
		Replaced: fmt.Errorf("appservice: the settings of %s were replaced by another writer right after Fusebox wrote them", siteName(app)),
	})
}

// makeSticky adds the functions' Disabled settings, and the other
// settings named, to the site's slot settings, so they stay with the slot
// in a swap.
func (s *Switch) makeSticky(ctx context.Context, app circuit.App, off map[string]bool, others []string) error {
	c, err := s.client(app)
	if err != nil {
		return err
	}
	resp, err := c.ListSlotConfigurationNames(ctx, app.ResourceGroup, app.Site, nil)
	if err != nil {
		return describe(app, "read the slot settings of", err)
	}
	res := resp.SlotConfigNamesResource
	if res.Properties == nil {
		res.Properties = &armappservice.SlotConfigNames{}
	}
	have := map[string]bool{}
	for _, n := range res.Properties.AppSettingNames {
		if n != nil {
			have[*n] = true
		}
	}
	var add []string
	for f, disabled := range off {
		if disabled && !have[trigger.Setting(f)] {
			add = append(add, trigger.Setting(f))
		}
	}
	for _, n := range others {
		if !have[n] {
			add = append(add, n)
		}
	}
	if len(add) == 0 {
		return nil
	}
	slices.Sort(add)
	for _, n := range add {
		res.Properties.AppSettingNames = append(res.Properties.AppSettingNames, &n)
	}
	names := armappservice.SlotConfigNamesResource{Properties: res.Properties}
	if _, err := c.UpdateSlotConfigurationNames(s.s.Once(ctx), app.ResourceGroup, app.Site, names, nil); err != nil {
		return describe(app, "make the Disabled settings slot-sticky on", err)
	}
	return nil
}

// describe words ARM's answers as what a person should do about them.
func describe(app circuit.App, doing string, err error) error {
	return armwrite.Target{
		Package: "appservice",
		Name:    siteName(app),
		Scope:   fmt.Sprintf("/subscriptions/%s/resourceGroups/%s/providers/Microsoft.Web/sites/%s", app.SubscriptionID, app.ResourceGroup, app.Site),
		Grant:   "the Fusebox trigger switch role (deploy/azure/guard.bicep) or Website Contributor",
		Needs:   "Microsoft.Web/sites/config/list/action and Microsoft.Web/sites/config/write",
		Gone:    "was the app deleted or renamed? Register it again, or delete its circuits",
	}.Describe(doing, err)
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
				return nil, describe(app, "list the functions of", err)
			}
			add(page.Value)
		}
	} else {
		p := c.NewListInstanceFunctionsSlotPager(app.ResourceGroup, app.Site, app.Slot, nil)
		for p.More() {
			page, err := p.NextPage(ctx)
			if err != nil {
				return nil, describe(app, "list the functions of", err)
			}
			add(page.Value)
		}
	}
	sort.Strings(names)
	return names, nil
}

// Effective reports what the host itself says of each function
// (properties.isDisabled), which follows the setting only once the restart
// that a settings change causes is over. A function the host does not
// list counts as not disabled.
func (s *Switch) Effective(ctx context.Context, app circuit.App, functions []string) (map[string]bool, error) {
	c, err := s.client(app)
	if err != nil {
		return nil, err
	}
	out := make(map[string]bool, len(functions))
	for _, f := range functions {
		var disabled *bool
		if app.Slot == "" {
			resp, err := c.GetFunction(ctx, app.ResourceGroup, app.Site, f, nil)
			if err != nil && !isNotFound(err) {
				return nil, describe(app, "read function "+f+" of", err)
			}
			if resp.Properties != nil {
				disabled = resp.Properties.IsDisabled
			}
		} else {
			resp, err := c.GetInstanceFunctionSlot(ctx, app.ResourceGroup, app.Site, f, app.Slot, nil)
			if err != nil && !isNotFound(err) {
				return nil, describe(app, "read function "+f+" of", err)
			}
			if resp.Properties != nil {
				disabled = resp.Properties.IsDisabled
			}
		}
		out[f] = disabled != nil && *disabled
	}
	return out, nil
}

func isNotFound(err error) bool {
	var re *azcore.ResponseError
	return errors.As(err, &re) && re.StatusCode == http.StatusNotFound
}

// Detect reads the site and says how it is hosted.
func (s *Switch) Detect(ctx context.Context, app circuit.App) (circuit.Hosting, error) {
	c, err := s.client(app)
	if err != nil {
		return circuit.Hosting{}, err
	}
	var raw *http.Response
	resp, err := c.Get(policy.WithCaptureResponse(ctx, &raw), app.ResourceGroup, app.Site, nil)
	if err != nil {
		return circuit.Hosting{}, describe(app, "read", err)
	}
	h, ok := hostingOf(resp.Site)
	if !ok {
		return h, fmt.Errorf("appservice: %s is a %q site, not a function app: %w", app.Site, h.Kind, armwrite.ErrPermanent)
	}
	if h.Plan == circuit.PlanFlex {
		h.RollingUpdates = rollingUpdates(raw)
	}
	return h, nil
}

// hostingOf says how a site is hosted, and whether it is a function app
// at all. RollingUpdates needs the raw answer (rollingUpdates).
func hostingOf(site armappservice.Site) (circuit.Hosting, bool) {
	h := circuit.Hosting{Plan: circuit.PlanAppService}
	if site.Kind != nil {
		h.Kind = *site.Kind
	}
	kind := strings.ToLower(h.Kind)
	h.Linux = strings.Contains(kind, "linux")
	if !strings.Contains(kind, "functionapp") {
		return h, false
	}
	p := site.Properties
	switch {
	case p != nil && p.FunctionAppConfig != nil:
		h.Plan = circuit.PlanFlex
		h.Linux = true // Flex Consumption runs Linux only
	case p != nil && p.ManagedEnvironmentID != nil && *p.ManagedEnvironmentID != "":
		h.Plan, h.Environment = circuit.PlanContainerApps, *p.ManagedEnvironmentID
	}
	return h, true
}

// rollingUpdates reads properties.functionAppConfig.siteUpdateStrategy,
// which this SDK version does not model, from the raw answer.
func rollingUpdates(raw *http.Response) bool {
	if raw == nil || raw.Body == nil {
		return false
	}
	body, err := runtime.Payload(raw)
	if err != nil {
		return false
	}
	var site struct {
		Properties struct {
			FunctionAppConfig struct {
				SiteUpdateStrategy struct {
					Type string `json:"type"`
				} `json:"siteUpdateStrategy"`
			} `json:"functionAppConfig"`
		} `json:"properties"`
	}
	return json.Unmarshal(body, &site) == nil && strings.EqualFold(site.Properties.FunctionAppConfig.SiteUpdateStrategy.Type, "RollingUpdate")
}

// SetSettings writes want into the app's settings in one read–merge–write,
// keeping every other setting; check sees the settings first and may
// refuse (another collector's endpoint, say). Nothing is written when
// they hold want already. The write restarts the app.
func (s *Switch) SetSettings(ctx context.Context, app circuit.App, want map[string]string, check func(current map[string]string) error) error {
	same := func(props map[string]*string) bool {
		for k, v := range want {
			if props[k] == nil || *props[k] != v {
				return false
			}
		}
		return true
	}
	return armwrite.Apply(ctx, s.s.Policy, armwrite.Change[map[string]*string]{
		Read: func(ctx context.Context) (map[string]*string, error) { return s.read(ctx, app) },
		Merge: func(props map[string]*string) (map[string]*string, bool, error) {
			current := make(map[string]string, len(props))
			for k, v := range props {
				if v != nil {
					current[k] = *v
				}
			}
			if err := check(current); err != nil {
				return nil, false, err
			}
			if same(props) {
				return props, false, nil
			}
			next := maps.Clone(props)
			for k, v := range want {
				next[k] = &v
			}
			return next, true, nil
		},
		Write:    func(ctx context.Context, next map[string]*string) error { return s.write(ctx, app, next) },
		Holds:    func(after map[string]*string) (bool, error) { return same(after), nil },
		Replaced: fmt.Errorf("appservice: the settings of %s were replaced by another writer right after Fusebox wrote them", siteName(app)),
	})
}
