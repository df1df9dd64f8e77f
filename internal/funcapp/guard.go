package funcapp

import (
	"context"
	"errors"
	"time"

	"github.com/fusebox/fusebox/internal/audit"
	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/fleet"
	"github.com/fusebox/fusebox/internal/jobs"
)

// Guarding saves a plan an operator confirmed (fleet.Propose): the app is
// registered first, then each circuit and job of the plan. Registering is
// the one step that may refuse the whole plan (a taken id, a site ARM
// says is no function app); a circuit or job refused after it is named
// in the outcome and the rest are still made, so one bad binding does not
// leave an app half guarded without saying which half.
type Guarding struct {
	Apps interface {
		Register(ctx context.Context, app circuit.App, actor string) (Registered, error)
	}
	Circuits interface {
		Create(ctx context.Context, appID, function string, set circuit.Settings, actor string) (circuit.Circuit, error)
	}
	Jobs interface {
		Create(ctx context.Context, j jobs.Job) error
	}
	Audit Auditor
	Now   func() time.Time
	// Settings writes app settings through ARM, for zero-code reporting;
	// BaseURL is where the host is to export. Nil: not offered.
	Settings SettingsWriter
	BaseURL  string
}

// SettingsWriter writes app settings in one read–merge–write
// (appservice.Switch), check seeing them first.
type SettingsWriter interface {
	SetSettings(ctx context.Context, app circuit.App, want map[string]string, check func(current map[string]string) error) error
}

// Guarded is what guarding made.
type Guarded struct {
	Registered Registered
	Circuits   []string // functions given a circuit
	Jobs       []string // functions given a job
	Refused    []fleet.Left
	// ZeroCode says what became of switching on zero-code reporting;
	// empty when it was not asked for.
	ZeroCode string
}

// Guard registers p.App and creates p's circuits and jobs.
func (g Guarding) Guard(ctx context.Context, p fleet.Plan, actor string) (Guarded, error) {
	reg, err := g.Apps.Register(ctx, p.App, actor)
	if err != nil {
		return Guarded{}, err
	}
	out := Guarded{Registered: reg}
	for _, c := range p.Circuits {
		if _, err := g.Circuits.Create(ctx, reg.App.ID, c.Function, c.Settings, actor); err != nil {
			out.Refused = append(out.Refused, fleet.Left{Function: c.Function, Why: "circuit: " + problem(err)})
			continue
		}
		out.Circuits = append(out.Circuits, c.Function)
	}
	for _, pj := range p.Jobs {
		j := jobs.Fresh(g.Now())
		j.Name, j.AppID, j.Function = pj.Function+" ("+reg.App.ID+")", reg.App.ID, pj.Function
		j.Schedule, j.TimeZone, j.Grace = pj.Schedule, pj.TimeZone, pj.Grace
		if err := g.Jobs.Create(ctx, j); err != nil {
			out.Refused = append(out.Refused, fleet.Left{Function: pj.Function, Why: "job: " + problem(err)})
			continue
		}
		if err := g.Audit.Append(ctx, audit.Entry{At: g.Now(), Actor: actor, Action: "created job", Target: j.Name, Job: j.ID, Detail: j.Schedule + " " + j.TimeZone}); err != nil {
			return out, err
		}
		out.Jobs = append(out.Jobs, pj.Function)
	}
	switch {
	case !p.ZeroCode:
	case g.Settings == nil:
		out.ZeroCode = "Zero-code reporting was not switched on: Fusebox has no Azure identity to write app settings with."
	default:
		err := g.Settings.SetSettings(ctx, reg.App, fleet.ZeroCodeSettings(g.BaseURL, reg.Key), fleet.ZeroCodeConflict(g.BaseURL, reg.App.ID))
		if err != nil {
			out.ZeroCode = "Zero-code reporting was not switched on: " + err.Error()
			break
		}
		out.ZeroCode = "Zero-code reporting is on: the host exports every invocation to Fusebox (the app restarts once to take the settings)."
		if err := g.Audit.Append(ctx, audit.Entry{At: g.Now(), Actor: actor, Action: "switched on zero-code reporting", Target: reg.App.ID, Detail: "OpenTelemetry to " + g.BaseURL}); err != nil {
			return out, err
		}
	}
	return out, nil
}

// problem words a refusal: a validation error's messages, or that
// storage failed (its text is not for pages).
func problem(err error) string {
	var v circuit.ValidationError // jobs' is the same type
	if errors.As(err, &v) {
		return v.Error()
	}
	return "not saved: storage did not answer"
}
