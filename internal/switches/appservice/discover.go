package appservice

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/arm"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/appservice/armappservice/v5"

	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/fleet"
)

// SurveyTimeout bounds the listing of one subscription: one that does not
// answer in time is reported as such and holds up no other.
const SurveyTimeout = 20 * time.Second

// surveysAtOnce bounds the subscriptions listed side by side.
const surveysAtOnce = 8

// Discoverer lists what Fusebox can see in Azure: the function apps of
// subscriptions (Reader is enough) and each app's functions with their
// triggers (Reader too; resolving %Setting% values also needs
// Microsoft.Web/sites/config/list/action, and without it says so).
type Discoverer struct {
	cred    azcore.TokenCredential
	opts    *arm.ClientOptions
	timeout time.Duration
}

// NewDiscoverer builds a discoverer on cred, with the switch's settings
// (transport, tracing, per-request time-out); perSubscription bounds the
// listing of each subscription (zero: SurveyTimeout).
func NewDiscoverer(cred azcore.TokenCredential, s Settings, perSubscription time.Duration) *Discoverer {
	s.Policy = s.Policy.WithDefaults()
	if perSubscription <= 0 {
		perSubscription = SurveyTimeout
	}
	return &Discoverer{cred: cred, opts: s.ClientOptions(s.Transport, s.Tracing), timeout: perSubscription}
}

// Survey lists the function apps of each subscription, side by side, each
// within its own time-out. A subscription that refuses or does not answer
// is a Refusal; what the others found is kept.
func (d *Discoverer) Survey(ctx context.Context, subscriptions []string) fleet.Survey {
	var (
		out  fleet.Survey
		mu   sync.Mutex
		wg   sync.WaitGroup
		sema = make(chan struct{}, surveysAtOnce)
	)
	for _, sub := range dedupe(subscriptions) {
		wg.Go(func() {
			sema <- struct{}{}
			defer func() { <-sema }()
			sctx, cancel := context.WithTimeout(ctx, d.timeout)
			defer cancel()
			sites, cut, err := d.list(sctx, sub)
			mu.Lock()
			defer mu.Unlock()
			out.Sites = append(out.Sites, sites...)
			if cut {
				out.Cut = append(out.Cut, sub)
			}
			if err != nil {
				out.Refused = append(out.Refused, fleet.Refusal{Subscription: sub, Reason: refusal(sctx, err, d.timeout)})
			}
		})
	}
	wg.Wait()
	out.Sort()
	return out
}

// list pages through one subscription's sites, keeping function apps.
func (d *Discoverer) list(ctx context.Context, sub string) ([]fleet.Site, bool, error) {
	c, err := armappservice.NewWebAppsClient(sub, d.cred, d.opts)
	if err != nil {
		return nil, false, err
	}
	var sites []fleet.Site
	seen := 0
	p := c.NewListPager(nil)
	for p.More() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return sites, false, err
		}
		for _, s := range page.Value {
			if seen++; seen > fleet.MaxSitesPerSubscription {
				d.slots(ctx, c, sites)
				return sites, true, nil
			}
			if site, ok := siteOf(sub, s); ok {
				sites = append(sites, site)
			}
		}
	}
	d.slots(ctx, c, sites)
	return sites, false, nil
}

// slotReadsAtOnce bounds the slot listings of one subscription in flight.
const slotReadsAtOnce = 4

// slots reads the deployment slots of the App Service sites among sites,
// at most fleet.MaxSlotReads of them, within the subscription's time-out;
// a site whose slots are not read says so.
func (d *Discoverer) slots(ctx context.Context, c *armappservice.WebAppsClient, sites []fleet.Site) {
	var wg sync.WaitGroup
	sema := make(chan struct{}, slotReadsAtOnce)
	reads := 0
	for i := range sites {
		site := &sites[i]
		if site.Hosting.Plan != circuit.PlanAppService {
			continue
		}
		if reads++; reads > fleet.MaxSlotReads {
			site.SlotsUnread = true
			continue
		}
		wg.Go(func() {
			sema <- struct{}{}
			defer func() { <-sema }()
			page, err := c.NewListSlotsPager(site.ResourceGroup, site.Name, nil).NextPage(ctx)
			if err != nil {
				site.SlotsUnread = true
				return
			}
			for _, s := range page.Value {
				if s == nil || s.Name == nil {
					continue
				}
				// ARM names a slot "site/slot".
				name := *s.Name
				if i := strings.LastIndexByte(name, '/'); i >= 0 {
					name = name[i+1:]
				}
				if name != "" && len(site.Slots) < 20 {
					site.Slots = append(site.Slots, fleet.Slot{Name: name})
				}
			}
			sort.Slice(site.Slots, func(a, b int) bool { return site.Slots[a].Name < site.Slots[b].Name })
		})
	}
	wg.Wait()
}

// siteOf reads a listed site; sites that are not function apps, or whose
// id is not a site's, are left out.
func siteOf(sub string, s *armappservice.Site) (fleet.Site, bool) {
	if s == nil || s.ID == nil {
		return fleet.Site{}, false
	}
	h, ok := hostingOf(*s)
	if !ok {
		return fleet.Site{}, false
	}
	id, err := arm.ParseResourceID(*s.ID)
	if err != nil || !strings.EqualFold(id.ResourceType.String(), "Microsoft.Web/sites") {
		return fleet.Site{}, false
	}
	site := fleet.Site{Subscription: sub, ResourceGroup: id.ResourceGroupName, Name: id.Name, Hosting: h}
	if s.Location != nil {
		site.Region = *s.Location
	}
	return site, true
}

// refusal says why a subscription could not be listed, in Fusebox's words:
// ARM's own message never reaches a page.
func refusal(ctx context.Context, err error, timeout time.Duration) string {
	var re *azcore.ResponseError
	switch {
	case ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded):
		return fmt.Sprintf("did not answer within %s", timeout)
	case errors.As(err, &re) && (re.StatusCode == http.StatusForbidden || re.StatusCode == http.StatusUnauthorized):
		return "Fusebox may not list its sites: grant its identity Reader on the subscription (deploy/azure/discovery.bicep)"
	case errors.As(err, &re) && re.StatusCode == http.StatusNotFound:
		return "no such subscription, or Fusebox's identity cannot see it"
	case errors.As(err, &re) && re.StatusCode == http.StatusTooManyRequests:
		return "ARM is throttling Fusebox's calls to it (429); the next survey, in five minutes, tries again"
	case errors.As(err, &re):
		return fmt.Sprintf("ARM answered %d", re.StatusCode)
	}
	return "ARM could not be reached"
}

// Functions lists an app's functions with their triggers, resolving
// %Setting% values from its settings when Fusebox may read them.
func (d *Discoverer) Functions(ctx context.Context, app circuit.App) ([]fleet.Function, error) {
	in, err := d.Inspect(ctx, app)
	return in.Functions, err
}

// Inspect is Functions with the settings a plan to guard the app reads
// (fleet.PlanSettings); the rest of the app's settings are not kept.
func (d *Discoverer) Inspect(ctx context.Context, app circuit.App) (fleet.Inspection, error) {
	c, err := armappservice.NewWebAppsClient(app.SubscriptionID, d.cred, d.opts)
	if err != nil {
		return fleet.Inspection{}, err
	}
	settings, unread := d.settings(ctx, c, app)
	var out []fleet.Function
	add := func(envs []*armappservice.FunctionEnvelope) {
		for _, e := range envs {
			if len(out) < fleet.MaxFunctions && e != nil && e.Name != nil {
				out = append(out, functionOf(e, settings, unread))
			}
		}
	}
	if app.Slot == "" {
		for p := c.NewListFunctionsPager(app.ResourceGroup, app.Site, nil); p.More() && len(out) < fleet.MaxFunctions; {
			page, err := p.NextPage(ctx)
			if err != nil {
				return fleet.Inspection{}, functionsRefused(ctx, app, err)
			}
			add(page.Value)
		}
	} else {
		for p := c.NewListInstanceFunctionsSlotPager(app.ResourceGroup, app.Site, app.Slot, nil); p.More() && len(out) < fleet.MaxFunctions; {
			page, err := p.NextPage(ctx)
			if err != nil {
				return fleet.Inspection{}, functionsRefused(ctx, app, err)
			}
			add(page.Value)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return fleet.Inspection{Functions: out, Settings: fleet.PlanSettings(settings, out), Unread: unread}, nil
}

// functionsRefused says why an app's functions could not be listed, with
// what listing needs (Reader, not the switch's role), never ARM's words.
func functionsRefused(ctx context.Context, app circuit.App, err error) error {
	var re *azcore.ResponseError
	switch {
	case ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("ARM did not answer in time when listing the functions of %s", siteName(app))
	case errors.As(err, &re) && (re.StatusCode == http.StatusForbidden || re.StatusCode == http.StatusUnauthorized):
		return fmt.Errorf("listing the functions of %s is not allowed: grant Fusebox's identity Reader on the app or its resource group (deploy/azure/discovery.bicep)", siteName(app))
	case errors.As(err, &re) && re.StatusCode == http.StatusNotFound:
		return goneError(fmt.Sprintf("ARM has no site %s: was the app deleted or renamed? Register it again, or delete its circuits", siteName(app)))
	case errors.As(err, &re):
		return fmt.Errorf("ARM answered %d when listing the functions of %s", re.StatusCode, siteName(app))
	}
	return fmt.Errorf("ARM could not be reached to list the functions of %s", siteName(app))
}

// goneError is ARM's 404 for a site, in Fusebox's words; it is fleet.ErrGone.
type goneError string

func (e goneError) Error() string        { return string(e) }
func (e goneError) Is(target error) bool { return target == fleet.ErrGone }

func functionOf(e *armappservice.FunctionEnvelope, settings fleet.Settings, unread string) fleet.Function {
	// ARM names a function "site/function".
	f := fleet.Function{Name: *e.Name}
	if i := strings.LastIndexByte(f.Name, '/'); i >= 0 {
		f.Name = f.Name[i+1:]
	}
	if e.Properties == nil || e.Properties.Config == nil {
		f.Problem = "ARM lists no config for this function"
		return f
	}
	raw, err := json.Marshal(e.Properties.Config)
	if err != nil {
		f.Problem = "its config could not be read"
		return f
	}
	if f.Trigger, err = fleet.ParseTrigger(raw, settings, unread); err != nil {
		f.Problem = strings.TrimPrefix(err.Error(), "fleet: ")
	}
	return f
}

// settings reads the app's settings for %Setting% values; without the
// right, nil and why.
func (d *Discoverer) settings(ctx context.Context, c *armappservice.WebAppsClient, app circuit.App) (fleet.Settings, string) {
	var props map[string]*string
	var err error
	if app.Slot == "" {
		var resp armappservice.WebAppsClientListApplicationSettingsResponse
		resp, err = c.ListApplicationSettings(ctx, app.ResourceGroup, app.Site, nil)
		props = resp.Properties
	} else {
		var resp armappservice.WebAppsClientListApplicationSettingsSlotResponse
		resp, err = c.ListApplicationSettingsSlot(ctx, app.ResourceGroup, app.Site, app.Slot, nil)
		props = resp.Properties
	}
	var re *azcore.ResponseError
	switch {
	case errors.As(err, &re) && re.StatusCode == http.StatusForbidden:
		return nil, "Fusebox may not list them (Microsoft.Web/sites/config/list/action)"
	case err != nil:
		return nil, "ARM did not answer when Fusebox read them"
	}
	out := make(fleet.Settings, len(props))
	for k, v := range props {
		if v != nil {
			out[k] = *v
		}
	}
	return out, ""
}

func dedupe(subs []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range subs {
		s = strings.TrimSpace(s)
		if s == "" || seen[strings.ToLower(s)] {
			continue
		}
		seen[strings.ToLower(s)] = true
		out = append(out, s)
	}
	return out
}
