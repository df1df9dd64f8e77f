// Package containerapps turns Azure Functions triggers off and on for function
// apps that run as Azure Container Apps (Microsoft.App/containerApps), by
// setting the environment variable AzureWebJobs_<FunctionName>_Disabled on
// the containers that run the Functions host. Dots are not allowed in
// container environment variable names, so the underscore form the host
// also reads is the one used.
//
// A change of a container's environment makes a new revision, and the host
// reads the variable when that revision's replicas start. So Apply reads
// the app, changes only the variables it was asked to (on every host
// container, keeping everything else), writes the template back in one
// PATCH, waits for the new revision to finish provisioning, and reads back.
// Like the App Service switch it never replays a write: a 409, 429,
// time-out or 5xx makes the next try read and merge again. The 2025-01-01
// API carries no ETag on container apps, so the read-back is what catches
// a writer that replaced the template meanwhile.
//
// A throttle's settings (AzureFunctionsJobHost__… options, which the host
// reads from its environment as it reads app settings) are variables of
// the same host containers, merged into the same one PATCH: a throttle and
// a trip of one app start one revision.
//
// The package keeps the armappcontainers module out of the rest of the tree.
package containerapps

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/arm"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/tracing"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/appcontainers/armappcontainers/v3"

	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/switches/armwrite"
	"github.com/fusebox/fusebox/internal/trigger"
)

// Settings tune the switch. Zero values take the defaults.
type Settings struct {
	armwrite.Policy
	// PollEvery is how often the new revision's provisioning is checked;
	// default 2s. The caller's context bounds the wait.
	PollEvery time.Duration
	Transport policy.Transporter // the SDK's fake server in tests
}

// Switch is a circuit.Switch for function apps on Container Apps.
type Switch struct {
	cred azcore.TokenCredential
	opts *arm.ClientOptions
	s    Settings

	apps      armwrite.Clients[armappcontainers.ContainerAppsClient]
	revisions armwrite.Clients[armappcontainers.ContainerAppsRevisionsClient]
}

var (
	_ circuit.Switch = (*Switch)(nil)
	_ circuit.Tuner  = (*Switch)(nil)
)

// New builds a switch that authenticates with cred.
func New(cred azcore.TokenCredential, s Settings) *Switch {
	s.Policy = s.Policy.WithDefaults()
	if s.PollEvery <= 0 {
		s.PollEvery = 2 * time.Second
	}
	opts := s.ClientOptions(s.Transport, tracing.Provider{})
	sw := &Switch{cred: cred, opts: opts, s: s}
	sw.apps.Package, sw.apps.Resource = "containerapps", "container app name"
	sw.revisions.Package, sw.revisions.Resource = "containerapps", "container app name"
	sw.apps.New = func(sub string) (*armappcontainers.ContainerAppsClient, error) {
		return armappcontainers.NewContainerAppsClient(sub, cred, opts)
	}
	sw.revisions.New = func(sub string) (*armappcontainers.ContainerAppsRevisionsClient, error) {
		return armappcontainers.NewContainerAppsRevisionsClient(sub, cred, opts)
	}
	return sw
}

func (s *Switch) client(app circuit.App) (*armappcontainers.ContainerAppsClient, error) {
	return s.apps.For(app)
}

func (s *Switch) revisionsClient(app circuit.App) (*armappcontainers.ContainerAppsRevisionsClient, error) {
	return s.revisions.For(app)
}

func (s *Switch) get(ctx context.Context, app circuit.App) (armappcontainers.ContainerApp, error) {
	c, err := s.client(app)
	if err != nil {
		return armappcontainers.ContainerApp{}, err
	}
	resp, err := c.Get(ctx, app.ResourceGroup, app.Site, nil)
	if err != nil {
		return armappcontainers.ContainerApp{}, describe(app, "read", err)
	}
	return resp.ContainerApp, nil
}

// Detect reads the container app and says which Container Apps
// environment it runs in.
func (s *Switch) Detect(ctx context.Context, app circuit.App) (circuit.Hosting, error) {
	ca, err := s.get(ctx, app)
	if err != nil {
		return circuit.Hosting{}, err
	}
	h := circuit.Hosting{Linux: true}
	if p := ca.Properties; p != nil {
		switch {
		case p.ManagedEnvironmentID != nil:
			h.Environment = *p.ManagedEnvironmentID
		case p.EnvironmentID != nil:
			h.Environment = *p.EnvironmentID
		}
	}
	return h, nil
}

// hostEnv marks a container that runs the Functions host.
var hostEnv = []string{"FUNCTIONS_WORKER_RUNTIME", "FUNCTIONS_EXTENSION_VERSION", "AzureWebJobsStorage", "AzureWebJobsStorage__accountName",
	"AzureWebJobsStorage__blobServiceUri", "AzureWebJobsScriptRoot"}

// isHost reports whether a container runs the Functions host: its image
// is one of Microsoft's Functions images, or its environment configures
// the host.
func isHost(c *armappcontainers.Container) bool {
	if c == nil {
		return false
	}
	if c.Image != nil && strings.Contains(*c.Image, "azure-functions") {
		return true
	}
	for _, e := range c.Env {
		if e != nil && e.Name != nil && slices.Contains(hostEnv, *e.Name) {
			return true
		}
	}
	return false
}

// ErrNoHost is a container app none of whose containers runs the Functions host.
var ErrNoHost = errors.New("containerapps: no container of this app runs the Functions host (none uses a mcr.microsoft.com/azure-functions image or sets FUNCTIONS_WORKER_RUNTIME or AzureWebJobsStorage)")

// hosts returns the host containers of the app's template.
func hosts(app circuit.App, ca armappcontainers.ContainerApp) ([]*armappcontainers.Container, error) {
	if ca.Properties == nil || ca.Properties.Template == nil {
		return nil, fmt.Errorf("containerapps: %s has no template", app.Site)
	}
	var out []*armappcontainers.Container
	var names []string
	for _, c := range ca.Properties.Template.Containers {
		if isHost(c) {
			out = append(out, c)
		}
		if c != nil && c.Name != nil {
			names = append(names, *c.Name)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: %s has %s: %w", ErrNoHost, app.Site, strings.Join(names, ", "), armwrite.ErrPermanent)
	}
	return out, nil
}

func disabledIn(c *armappcontainers.Container) map[string]bool {
	out := map[string]bool{}
	for _, e := range c.Env {
		if e == nil || e.Name == nil || e.Value == nil {
			continue
		}
		if f, ok := trigger.FunctionOf(*e.Name); ok && trigger.Truthy(*e.Value) {
			out[f] = true
		}
	}
	return out
}

// Disabled returns the functions the host containers' environment
// switches off (on every host container: one that differs counts as on).
func (s *Switch) Disabled(ctx context.Context, app circuit.App) (map[string]bool, error) {
	ca, err := s.get(ctx, app)
	if err != nil {
		return nil, err
	}
	return disabledTemplate(app, ca)
}

func disabledTemplate(app circuit.App, ca armappcontainers.ContainerApp) (map[string]bool, error) {
	hs, err := hosts(app, ca)
	if err != nil {
		return nil, err
	}
	out := disabledIn(hs[0])
	for _, h := range hs[1:] {
		other := disabledIn(h)
		for f := range out {
			if !other[f] {
				delete(out, f)
			}
		}
	}
	return out, nil
}

// merge switches each function on every host container as off says and
// reports whether anything changed.
func merge(hs []*armappcontainers.Container, off map[string]bool) bool {
	changed := false
	for _, c := range hs {
		for f, disabled := range off {
			key, dotted := trigger.AltSetting(f), trigger.Setting(f)
			var kept []*armappcontainers.EnvironmentVar
			now := false
			for _, e := range c.Env {
				if e != nil && e.Name != nil && (*e.Name == key || *e.Name == dotted) {
					if e.Value != nil && trigger.Truthy(*e.Value) {
						now = true
					}
					continue
				}
				kept = append(kept, e)
			}
			if now == disabled {
				continue // already so: no new revision
			}
			changed = true
			if disabled {
				on := "true"
				kept = append(kept, &armappcontainers.EnvironmentVar{Name: &key, Value: &on})
			}
			c.Env = kept
		}
	}
	return changed
}

func holds(app circuit.App, ca armappcontainers.ContainerApp, off map[string]bool) (bool, error) {
	hs, err := hosts(app, ca)
	if err != nil {
		return false, err
	}
	for _, h := range hs {
		d := disabledIn(h)
		for f, want := range off {
			if d[f] != want {
				return false, nil
			}
		}
	}
	return true, nil
}

// Apply switches each function in off in one new revision.
func (s *Switch) Apply(ctx context.Context, app circuit.App, off map[string]bool) error {
	return s.Tune(ctx, app, off, nil)
}

// Settings reads the host containers' environment (for a throttle's plan
// and record): the variables with a plain value on which every host
// container agrees. One from a secret, or set differently on two host
// containers, is left out here, and Tune refuses to change it.
func (s *Switch) Settings(ctx context.Context, app circuit.App) (map[string]string, error) {
	ca, err := s.get(ctx, app)
	if err != nil {
		return nil, err
	}
	hs, err := hosts(app, ca)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for name, v := range plainEnv(hs[0]) {
		if agreed(hs, name) == nil {
			out[name] = v
		}
	}
	return out, nil
}

// Tune switches each function in off and sets each variable in set (nil:
// removes it) on every host container, in one new revision: a throttle
// and a trip of one app start one revision, not two.
func (s *Switch) Tune(ctx context.Context, app circuit.App, off map[string]bool, set map[string]*string) error {
	for f := range off {
		if err := trigger.CheckSettable(f, true); err != nil { // Container Apps run Linux
			return fmt.Errorf("containerapps: %w", err)
		}
	}
	for name := range set {
		if !envName(name) {
			return fmt.Errorf("containerapps: %q cannot be a container's environment variable (letters, digits and _ only): %w", name, armwrite.ErrPermanent)
		}
	}
	return armwrite.Apply(ctx, s.s.Policy, armwrite.Change[armappcontainers.ContainerApp]{
		Read: func(ctx context.Context) (armappcontainers.ContainerApp, error) { return s.get(ctx, app) },
		Merge: func(ca armappcontainers.ContainerApp) (armappcontainers.ContainerApp, bool, error) {
			hs, err := hosts(app, ca)
			if err != nil {
				return ca, false, err
			}
			for name := range set {
				if err := agreed(hs, name); err != nil {
					return ca, false, fmt.Errorf("containerapps: %s: %w", app.Site, err)
				}
			}
			// merge and setEnv edit ca's host containers in place.
			switched := merge(hs, off)
			tuned := setEnv(hs, set)
			return ca, switched || tuned, nil
		},
		Write: func(ctx context.Context, ca armappcontainers.ContainerApp) error { return s.write(ctx, app, ca) },
		Holds: func(ca armappcontainers.ContainerApp) (bool, error) {
			ok, err := holds(app, ca, off)
			if err != nil || !ok {
				return ok, err
			}
			hs, err := hosts(app, ca)
			if err != nil {
				return false, err
			}
			for _, h := range hs {
				if !armwrite.HoldsSet(pointers(plainEnv(h)), set) {
					return false, nil
				}
			}
			return true, nil
		},
		Replaced: fmt.Errorf("containerapps: the template of %s was replaced by another writer right after Fusebox wrote it", app.Site),
	})
}

// plainEnv is a container's variables that have a plain value.
func plainEnv(c *armappcontainers.Container) map[string]string {
	out := map[string]string{}
	for _, e := range c.Env {
		if e != nil && e.Name != nil && e.Value != nil && e.SecretRef == nil {
			out[*e.Name] = *e.Value
		}
	}
	return out
}

func pointers(m map[string]string) map[string]*string {
	out := make(map[string]*string, len(m))
	for k, v := range m {
		out[k] = &v
	}
	return out
}

// agreed refuses a variable Fusebox must not write over: one a host
// container takes from a secret (writing a value would drop the
// reference, and putting it back would lose it), or one two host
// containers set differently (there is no one value to put back).
func agreed(hs []*armappcontainers.Container, name string) error {
	var first *string
	for i, h := range hs {
		var v *string
		for _, e := range h.Env {
			if e == nil || e.Name == nil || *e.Name != name {
				continue
			}
			if e.SecretRef != nil {
				return fmt.Errorf("%s takes %s from the secret %q; Fusebox does not write over it: %w", nameOf(h), name, *e.SecretRef, armwrite.ErrPermanent)
			}
			v = e.Value
		}
		if i == 0 {
			first = v
			continue
		}
		if (first == nil) != (v == nil) || (first != nil && *first != *v) {
			return fmt.Errorf("the host containers set %s differently; Fusebox would not know which value to put back: %w", name, armwrite.ErrPermanent)
		}
	}
	return nil
}

func nameOf(c *armappcontainers.Container) string {
	if c.Name == nil {
		return "a host container"
	}
	return "the container " + *c.Name
}

// setEnv sets each variable in set on every host container (nil: removes
// it) and reports whether anything changed.
func setEnv(hs []*armappcontainers.Container, set map[string]*string) bool {
	changed := false
	for _, c := range hs {
		for _, name := range slices.Sorted(maps.Keys(set)) {
			want := set[name]
			at := slices.IndexFunc(c.Env, func(e *armappcontainers.EnvironmentVar) bool { return e != nil && e.Name != nil && *e.Name == name })
			switch {
			case want == nil && at >= 0:
				c.Env = slices.Delete(c.Env, at, at+1)
				changed = true
			case want != nil && at < 0:
				c.Env = append(c.Env, &armappcontainers.EnvironmentVar{Name: to.Ptr(name), Value: to.Ptr(*want)})
				changed = true
			case want != nil && (c.Env[at].Value == nil || *c.Env[at].Value != *want):
				c.Env[at] = &armappcontainers.EnvironmentVar{Name: to.Ptr(name), Value: to.Ptr(*want)}
				changed = true
			}
		}
	}
	return changed
}

// envName says whether name can be a container's environment variable as
// Container Apps takes it.
func envName(name string) bool {
	if name == "" || name[0] >= '0' && name[0] <= '9' {
		return false
	}
	for i := range len(name) {
		c := name[i]
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// write PATCHes the template (merge patch replaces the containers list
// whole, so it is sent whole) and waits for the new revision.
func (s *Switch) write(ctx context.Context, app circuit.App, ca armappcontainers.ContainerApp) error {
	c, err := s.client(app)
	if err != nil {
		return err
	}
	patch := armappcontainers.ContainerApp{Location: ca.Location, Properties: &armappcontainers.ContainerAppProperties{Template: ca.Properties.Template}}
	poller, err := c.BeginUpdate(s.s.Once(ctx), app.ResourceGroup, app.Site, patch, nil)
	if err != nil {
		return describe(app, "write the template of", err)
	}
	resp, err := poller.PollUntilDone(ctx, &runtime.PollUntilDoneOptions{Frequency: s.s.PollEvery})
	if err != nil {
		return describe(app, "wait for the new revision of", err)
	}
	if p := resp.Properties; p != nil && p.ProvisioningState != nil && *p.ProvisioningState != armappcontainers.ContainerAppProvisioningStateSucceeded {
		return fmt.Errorf("containerapps: the new revision of %s ended %s", app.Site, *p.ProvisioningState)
	}
	return nil
}

// Effective reports what the running revision's host containers have: the
// latest ready revision's environment, which is what the host read when
// its replicas started. While the new revision is not ready yet it is the
// old one's.
func (s *Switch) Effective(ctx context.Context, app circuit.App, functions []string) (map[string]bool, error) {
	ca, err := s.get(ctx, app)
	if err != nil {
		return nil, err
	}
	if ca.Properties == nil || ca.Properties.LatestReadyRevisionName == nil {
		return nil, fmt.Errorf("containerapps: %s has no ready revision", app.Site)
	}
	rc, err := s.revisionsClient(app)
	if err != nil {
		return nil, err
	}
	rev, err := rc.GetRevision(ctx, app.ResourceGroup, app.Site, *ca.Properties.LatestReadyRevisionName, nil)
	if err != nil {
		return nil, describe(app, "read the running revision of", err)
	}
	if rev.Properties == nil || rev.Properties.Template == nil {
		return nil, fmt.Errorf("containerapps: the revision %s of %s has no template", *ca.Properties.LatestReadyRevisionName, app.Site)
	}
	d, err := disabledTemplate(app, armappcontainers.ContainerApp{Properties: &armappcontainers.ContainerAppProperties{Template: rev.Properties.Template}})
	if err != nil {
		return nil, err
	}
	out := make(map[string]bool, len(functions))
	for _, f := range functions {
		out[f] = d[f]
	}
	return out, nil
}

// describe words ARM's answers as what a person should do about them.
func describe(app circuit.App, doing string, err error) error {
	return armwrite.Target{
		Package: "containerapps",
		Name:    app.Site,
		Scope:   fmt.Sprintf("/subscriptions/%s/resourceGroups/%s/providers/Microsoft.App/containerApps/%s", app.SubscriptionID, app.ResourceGroup, app.Site),
		Grant:   "the Container Apps Contributor role",
		Needs:   "Microsoft.App/containerApps/read and write",
		Gone:    "was the container app deleted or renamed?",
	}.Describe(doing, err)
}
