// Package switches turns Azure Functions triggers off and on, by the
// method each app is registered with: Azure Resource Manager app settings
// for apps on App Service plans, container environment variables for apps
// on Azure Container Apps, local.settings.json for apps run with Core Tools.
package switches

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/switches/appservice"
	"github.com/fusebox/fusebox/internal/switches/localsettings"
)

// Router sends each app to the switch it is registered with. A nil ARM
// switch refuses ARM apps with a clear error.
type Router struct {
	ARM          circuit.Switch // App Service, Premium, Consumption, Flex Consumption
	ContainerApp circuit.Switch // Azure Container Apps
	Local        circuit.Switch
}

var _ circuit.Switch = Router{}

// ErrNoARM is an ARM app when Fusebox has no ARM switch configured.
var ErrNoARM = errors.New("switches: this Fusebox has no Azure Resource Manager switch configured")

func (r Router) pick(app circuit.App) (circuit.Switch, error) {
	switch app.Switch {
	case circuit.SwitchLocal:
		return r.Local, nil
	case circuit.SwitchARM:
		if r.ARM == nil {
			return nil, ErrNoARM
		}
		return r.ARM, nil
	case circuit.SwitchContainerApp:
		if r.ContainerApp == nil {
			return nil, ErrNoARM
		}
		return r.ContainerApp, nil
	}
	return nil, fmt.Errorf("switches: app %s has unknown switch %q", app.ID, app.Switch)
}

func (r Router) Disabled(ctx context.Context, app circuit.App) (map[string]bool, error) {
	sw, err := r.pick(app)
	if err != nil {
		return nil, err
	}
	return sw.Disabled(ctx, app)
}

func (r Router) Apply(ctx context.Context, app circuit.App, off map[string]bool) error {
	sw, err := r.pick(app)
	if err != nil {
		return err
	}
	return sw.Apply(ctx, app, off)
}

// Settings reads the app's settings where its switch can change them too.
func (r Router) Settings(ctx context.Context, app circuit.App) (map[string]string, error) {
	sw, err := r.pick(app)
	if err != nil {
		return nil, err
	}
	tu, ok := sw.(circuit.Tuner)
	if !ok {
		return nil, circuit.ErrCannotTune
	}
	return tu.Settings(ctx, app)
}

// Tune switches triggers and sets settings in one write, where the app's
// switch can.
func (r Router) Tune(ctx context.Context, app circuit.App, off map[string]bool, set map[string]*string) error {
	sw, err := r.pick(app)
	if err != nil {
		return err
	}
	tu, ok := sw.(circuit.Tuner)
	if !ok {
		return circuit.ErrCannotTune
	}
	return tu.Tune(ctx, app, off, set)
}

// Effective reads the host's own view of the functions where the app's
// switch can; circuit.ErrCannotConfirm where it cannot (local apps).
func (r Router) Effective(ctx context.Context, app circuit.App, functions []string) (map[string]bool, error) {
	sw, err := r.pick(app)
	if err != nil {
		return nil, err
	}
	hr, ok := sw.(circuit.HostReader)
	if !ok {
		return nil, circuit.ErrCannotConfirm
	}
	return hr.Effective(ctx, app, functions)
}

// CheckFunction refuses a function the app's host does not have, and one
// the host reports disabled although its setting is not set (a [Disable]
// attribute or "disabled" in function.json): switching the setting would
// change nothing. When ARM cannot be asked (no switch, no role, busy),
// it refuses nothing: the circuit page shows what the switch later finds.
func (r Router) CheckFunction(ctx context.Context, app circuit.App, function string) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	names, err := r.Functions(ctx, app)
	if err != nil || names == nil {
		return nil
	}
	if !slices.Contains(names, function) {
		shown := names
		if len(shown) > 10 {
			shown = shown[:10]
		}
		return fmt.Errorf("the app has no function %q (it has %s)", function, strings.Join(shown, ", "))
	}
	eff, err := r.Effective(ctx, app, []string{function})
	if err != nil || !eff[function] {
		return nil
	}
	settings, err := r.Disabled(ctx, app)
	if err == nil && !settings[function] {
		return fmt.Errorf("the host reports %s disabled although AzureWebJobs.%s.Disabled is not set: a [Disable] attribute or function.json switches it off, and its setting would change nothing", function, function)
	}
	return nil
}

// Detect asks ARM how an App Service app is hosted; the zero Hosting, and
// no error, for switches that cannot tell.
func (r Router) Detect(ctx context.Context, app circuit.App) (circuit.Hosting, error) {
	sw, err := r.pick(app)
	if err != nil {
		return circuit.Hosting{}, err
	}
	d, ok := sw.(interface {
		Detect(context.Context, circuit.App) (circuit.Hosting, error)
	})
	if !ok {
		return circuit.Hosting{}, nil
	}
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	return d.Detect(ctx, app)
}

// functionLister is a switch that can also list an app's functions.
type functionLister interface {
	Functions(ctx context.Context, app circuit.App) ([]string, error)
}

// Functions lists an app's functions where its switch can (ARM); local apps
// have no list, and get none.
func (r Router) Functions(ctx context.Context, app circuit.App) ([]string, error) {
	sw, err := r.pick(app)
	if err != nil {
		return nil, err
	}
	if fl, ok := sw.(functionLister); ok {
		return fl.Functions(ctx, app)
	}
	return nil, nil
}

// runner is a switch that can also run a function once, now.
type runner interface {
	Run(ctx context.Context, app circuit.App, function string) error
}

// Run starts a function once through its host's admin API.
func (r Router) Run(ctx context.Context, app circuit.App, function string) error {
	sw, err := r.pick(app)
	if err != nil {
		return err
	}
	rn, ok := sw.(runner)
	if !ok {
		return fmt.Errorf("switches: app %s's switch cannot run functions", app.ID)
	}
	return rn.Run(ctx, app, function)
}

// Local edits each app's local.settings.json, where Where allows.
type Local struct {
	Where      localsettings.Where
	HTTPClient *http.Client // for Run; nil: http.DefaultClient
	// Delay is how long each write waits first, as an ARM write takes
	// seconds (development only: config.LocalSwitchDelay). A call whose
	// context ends meanwhile writes nothing.
	Delay time.Duration
}

func (l Local) Disabled(_ context.Context, app circuit.App) (map[string]bool, error) {
	path, err := l.Where.Check(app.LocalSettings)
	if err != nil {
		return nil, err
	}
	return localsettings.DisabledFunctions(path)
}

func (l Local) Apply(ctx context.Context, app circuit.App, off map[string]bool) error {
	return l.Tune(ctx, app, off, nil)
}

func (l Local) Settings(_ context.Context, app circuit.App) (map[string]string, error) {
	path, err := l.Where.Check(app.LocalSettings)
	if err != nil {
		return nil, err
	}
	return localsettings.Settings(path)
}

func (l Local) Tune(ctx context.Context, app circuit.App, off map[string]bool, set map[string]*string) error {
	path, err := l.Where.Check(app.LocalSettings)
	if err != nil {
		return err
	}
	if l.Delay > 0 {
		t := time.NewTimer(l.Delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
	return localsettings.Tune(path, off, set)
}

// Run calls Core Tools' admin API on this machine, at the port the app's
// local.settings.json gives (Host.LocalHttpPort, 7071 by default).
func (l Local) Run(ctx context.Context, app circuit.App, function string) error {
	path, err := l.Where.Check(app.LocalSettings)
	if err != nil {
		return err
	}
	port, err := localsettings.HostPort(path)
	if err != nil {
		return err
	}
	return appservice.PostAdmin(ctx, l.HTTPClient, fmt.Sprintf("http://127.0.0.1:%d", port), function, "")
}
