package circuit

import (
	"fmt"
)

// SwitchKind names how Fusebox turns a function app's trigger on and off.
type SwitchKind string

const (
	// SwitchARM edits the app's settings through Azure Resource Manager.
	SwitchARM SwitchKind = "arm"
	// SwitchLocal edits the local.settings.json that Azure Functions Core
	// Tools reads, for running function apps on a developer's machine.
	SwitchLocal SwitchKind = "local"
	// SwitchContainerApp sets AzureWebJobs_<name>_Disabled on the Functions
	// host containers of an Azure Container App, through ARM.
	SwitchContainerApp SwitchKind = "containerapp"
)

// App is a function app whose functions Fusebox guards.
type App struct {
	ID string // short slug chosen by the operator, unique
	// Team owns the app: its members see and act on its circuits, jobs,
	// queues and notices (internal/teams). Empty: admins' alone.
	Team           string
	DisplayName    string
	SubscriptionID string
	ResourceGroup  string
	Site           string
	Slot           string // empty for the production slot
	Switch         SwitchKind
	LocalSettings  string // path of local.settings.json, for SwitchLocal
	Linux          bool   // Linux plans reject app setting names with '-'
	// Guardrail bounds how many of the app's circuits the evaluator may
	// have switched off at once; trips beyond it are held for a person.
	Guardrail Guardrail
	// Hosting is what ARM said of the app when it was registered.
	Hosting Hosting
	// HostStorage is the app's own storage (AzureWebJobsStorage): a
	// connection string or a blob account URL read with Fusebox's managed
	// identity; empty: no host insight. A secret: never shown again.
	HostStorage string
	// EventHubs reaches the namespace of the hubs the app consumes, to
	// tell how many events wait behind its checkpoints: a connection
	// string with Listen rights, or the namespace's host name read with
	// Fusebox's managed identity; empty: no lag is shown. A secret.
	EventHubs string
	// SetAsideLimit is how many messages a poison or parking queue of the
	// app may gain in an hour before people are told it grows; 0: the
	// default (setaside.DefaultGrowthLimit).
	SetAsideLimit int
	// ResumeFrom is the way back offered first for the app's Event Hubs
	// circuits that choose none (ResumeFromFirstFailure or
	// ResumeFromCheckpoint); empty: from before the first failure.
	ResumeFrom string
	// HostID overrides the host id derived from the site name
	// (AzureFunctionsWebHost__hostid, when the app sets one).
	HostID string
	// InsightsAppID is the Application ID (a GUID, on its API Access
	// page) of the Application Insights resource the app sends its
	// telemetry to: a failure's sample trace then links to its
	// transaction there. Empty: no links.
	InsightsAppID string
	// Channels are the alert channels of circuits and jobs of this app
	// that name none of their own.
	Channels []string
	// Escalate is the escalation of the app's circuits that set none of
	// their own.
	Escalate Escalation
	// APIKeyHash is the SHA-256 (hex) of the key functions of this app use
	// to report failures over HTTP. The key itself is never stored.
	APIKeyHash string
}

// Hosting is where a function app runs, as ARM describes it.
type Hosting struct {
	Kind  string // the site's kind, such as "functionapp,linux"
	Plan  string // PlanAppService, PlanFlex or PlanContainerApps; empty: not detected
	Linux bool
	// RollingUpdates says a Flex Consumption app rolls a settings change
	// out instance by instance (siteUpdateStrategy RollingUpdate) instead
	// of restarting every instance at once.
	RollingUpdates bool
	// Environment is the ARM id of the Container Apps environment the app
	// runs in, as ARM said when it was registered; empty: none, or not
	// read. A team's scopes may name environments (teams.Scope).
	Environment string
}

// Hosting plans Fusebox tells apart.
const (
	PlanAppService    = "appservice"    // App Service, Premium, Consumption
	PlanFlex          = "flex"          // Flex Consumption
	PlanContainerApps = "containerapps" // a Functions site in a Container Apps environment
)

// Guardrail is a per-app limit on automatic trips: at most MaxOff circuits,
// and at most MaxShare of the app's circuits, off at once. Zero fields set
// no limit. One bad deploy then cannot switch off a whole app without a
// person deciding.
type Guardrail struct {
	MaxOff   int
	MaxShare float64 // in (0, 1]
}

// Limit is how many of total circuits may be off, or -1 for no limit.
func (g Guardrail) Limit(total int) int {
	limit := -1
	if g.MaxOff > 0 {
		limit = g.MaxOff
	}
	if g.MaxShare > 0 {
		byShare := int(g.MaxShare * float64(total))
		if limit < 0 || byShare < limit {
			limit = byShare
		}
	}
	return limit
}

// GuardrailHeld is a trip the app's guardrail does not allow: Off of the
// app's circuits are already off, and at most Limit may be.
type GuardrailHeld struct{ Off, Limit int }

func (h *GuardrailHeld) Error() string {
	return fmt.Sprintf("guardrail: %d of the app's circuits already off, at most %d", h.Off, h.Limit)
}

// Admits says whether tripping may switch one more of the app's circuits
// off, given every circuit of the app as storage holds it (tripping
// among them, as it stood) and how many could not be read, which count
// as off: a guardrail must never be exceeded because a row is unreadable.
// It is the same rule the evaluator's tick applies to its own reading,
// applied again to the reading a conditional write rests on.
func (g Guardrail) Admits(app []Circuit, unreadable int, tripping Circuit) error {
	off := unreadable
	for _, c := range app {
		if c.Function != tripping.Function && c.State.TriggerOff() && !c.Shadow {
			off++
		}
	}
	if limit := g.Limit(len(app) + unreadable); limit >= 0 && off+1 > limit {
		return &GuardrailHeld{Off: off, Limit: limit}
	}
	return nil
}
