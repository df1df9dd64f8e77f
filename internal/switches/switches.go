// Package switches turns Azure Functions triggers off and on, by the
// method each app is registered with: Azure Resource Manager app settings
// for apps in Azure, local.settings.json for apps run with Core Tools.
package switches

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/fusebox/fusebox/internal/armswitch"
	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/localswitch"
)

// Router sends each app to the switch it is registered with. A nil ARM
// switch refuses ARM apps with a clear error.
type Router struct {
	ARM   circuit.Switch
	Local circuit.Switch
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
	Where      localswitch.Where
	HTTPClient *http.Client // for Run; nil: http.DefaultClient
}

func (l Local) Disabled(_ context.Context, app circuit.App) (map[string]bool, error) {
	path, err := l.Where.Check(app.LocalSettings)
	if err != nil {
		return nil, err
	}
	return localswitch.DisabledFunctions(path)
}

func (l Local) Apply(_ context.Context, app circuit.App, off map[string]bool) error {
	path, err := l.Where.Check(app.LocalSettings)
	if err != nil {
		return err
	}
	return localswitch.Apply(path, off)
}

// Run calls Core Tools' admin API on this machine, at the port the app's
// local.settings.json gives (Host.LocalHttpPort, 7071 by default).
func (l Local) Run(ctx context.Context, app circuit.App, function string) error {
	path, err := l.Where.Check(app.LocalSettings)
	if err != nil {
		return err
	}
	port, err := localswitch.HostPort(path)
	if err != nil {
		return err
	}
	return armswitch.PostAdmin(ctx, l.HTTPClient, fmt.Sprintf("http://127.0.0.1:%d", port), function, "")
}
