package web

import (
	"context"
	"time"

	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/fleet"
	"github.com/fusebox/fusebox/internal/funcapp"
	"github.com/fusebox/fusebox/internal/otlp"
	"github.com/fusebox/fusebox/internal/setaside"
	"github.com/fusebox/fusebox/internal/setaside/queues"
	"github.com/fusebox/fusebox/internal/setaside/sendback"
)

// AppParts are what AppPages's handlers use, given to New.
type AppParts struct {
	Registry appRegistry
	Apps     appReader
	Circuits circuitsNow
	Rates    rateReader
	// Arrivals reads what arrived over OTLP, for the Apps page.
	Arrivals arrivalReader
	// Queues reads the work apps set aside (poison and parking queues),
	// Kept is what the watcher last saw of them, and SendBack requeues or
	// deletes them; with Queues nil none of it is shown.
	Queues   setAsideReader
	Kept     keptSetAside
	SendBack sendBacker
	// Fleet is the last survey of the subscriptions' function apps;
	// nil when Fusebox surveys none.
	Fleet fleetFinder
	// Triggers lists an ARM app's functions with their triggers; nil
	// without an Azure identity.
	Triggers functionTriggers
	// Inspector reads what guarding a found site needs (its
	// functions and a few settings), and Guarding saves a confirmed
	// plan; nil without an Azure identity.
	Inspector appInspector
	Guarding  appGuarding
	// Drift is the last check of what changed in Azure under each
	// ARM app; nil without an Azure identity.
	Drift driftReader
}

// missing names the required parts p lacks.
func (p AppParts) missing() []string {
	return absent("Apps",
		part{"Registry", p.Registry == nil},
		part{"Apps", p.Apps == nil},
		part{"Circuits", p.Circuits == nil},
		part{"Rates", p.Rates == nil},
		part{"Arrivals", p.Arrivals == nil},
		part{"Kept", p.Kept == nil},
		part{"Guarding", p.Guarding == nil},
	)
}

// AppPages register function apps, issue their keys, and show the
// work they set aside.
type AppPages struct {
	AppParts
	*core
}

// What AppPages holds, each the few methods its handlers call.
type (
	circuitsNow interface {
		List(context.Context) ([]circuit.Circuit, error)
		Recent(ctx context.Context, maxAge time.Duration) ([]circuit.Circuit, error)
	}
	setAsideReader interface {
		SetAside(ctx context.Context, app circuit.App, owners setaside.Owners) ([]queues.Found, error)
		Peek(ctx context.Context, app circuit.App, queue string, n, limit int) ([]queues.Message, error)
	}
	sendBacker interface {
		Do(ctx context.Context, app circuit.App, mv queues.Move, by, reason string) (sendback.Outcome, error)
		Start(ctx context.Context, app circuit.App, mv queues.Move, by, reason string) error
	}
	appRegistry interface {
		Register(ctx context.Context, app circuit.App, actor string) (funcapp.Registered, error)
		ReplaceKey(ctx context.Context, app circuit.App, actor string) (string, error)
		UpdateHost(ctx context.Context, app circuit.App, h funcapp.HostChange, actor string) ([]string, error)
		Update(ctx context.Context, app circuit.App, s funcapp.Settings, actor string) ([]string, error)
	}
	functionTriggers interface {
		Functions(ctx context.Context, app circuit.App) ([]fleet.Function, error)
	}
	driftReader interface {
		Of(appID string) (fleet.AppDrift, bool)
	}
	appGuarding interface {
		Guard(ctx context.Context, p fleet.Plan, actor string) (funcapp.Guarded, error)
	}
	fleetFinder interface {
		Latest(ctx context.Context) (fleet.Survey, time.Time, error)
	}
	arrivalReader interface {
		ArrivalsOf(ctx context.Context, appID string, from time.Time) ([]otlp.Arrival, error)
	}
)
