package fleet

import (
	"cmp"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/fusebox/fusebox/internal/circuit"
)

// This file proposes how to guard a function app Fusebox found: the app
// as it would be registered, a circuit for each event-driven function
// with defaults by trigger kind, and a job for each timer. Nothing is
// saved here; an operator reviews the plan and confirms it (Guard).

// Defaults by trigger kind (docs/fleet.md says why).
//
// Event Hubs, Cosmos DB and Kafka triggers move their checkpoint past a
// failed batch: every failure is an event lost, so their circuits trip
// early, on a count. Service Bus, Storage queue and blob triggers retry a
// message (5 dequeues, 10 deliveries by default) and then set it aside in
// a poison queue or dead-letter queue, so a few failures lose nothing and
// one poison message alone fails 5 to 10 times: their circuits trip on a
// sustained share of failures instead.
var (
	MovesOnDefaults = circuit.Settings{Threshold: 10, Window: time.Minute}
	// A ratio rule does not read the threshold, but every circuit keeps a
	// valid one (the form and the API require it): it was 0 here, and
	// guarding a queue function was refused.
	RetriesDefaults = circuit.Settings{Threshold: 100, Window: 5 * time.Minute, Rule: circuit.Rule{Ratio: 0.5, MinCalls: 100}}
	// TimerGrace is how late a timer's run may start before its job is
	// missing.
	TimerGrace = 5 * time.Minute
)

// MaxProposed bounds the circuits and jobs one plan proposes.
const MaxProposed = 200

// Plan is how Fusebox proposes to guard one site.
type Plan struct {
	App circuit.App
	// HostStorageFrom names the setting the host storage came from, or
	// says why there is none; HostStorageKeyed says it is a connection
	// string with the account's key (stored sealed, never shown again).
	HostStorageFrom  string
	HostStorageKeyed bool
	// EventHubsFrom says the same of the Event Hubs namespace.
	EventHubsFrom string
	Circuits      []ProposedCircuit
	Jobs          []ProposedJob
	// ZeroCode asks for the app's zero-code reporting to be switched on
	// (ZeroCodeSettings) once it is registered; the operator's choice.
	ZeroCode bool
	// ZeroCodeRefused says why zero-code reporting is not offered
	// (ZeroCodeRefusal of the settings read); "" when it is.
	ZeroCodeRefused string
	// Left are the functions proposed nothing, and why.
	Left []Left
}

// ProposedCircuit is a circuit the plan would create.
type ProposedCircuit struct {
	Function string
	Kind     string
	Settings circuit.Settings
	// Why says which defaults these are.
	Why string
}

// ProposedJob is a job the plan would create for a timer function.
type ProposedJob struct {
	Function string
	Schedule string
	TimeZone string
	Grace    time.Duration
}

// Left is a function the plan proposes nothing for.
type Left struct {
	Function string
	Why      string
}

// Propose plans the guarding of site from its functions and the app
// settings Fusebox could read (nil: none). blobSuffix is the cloud's blob
// endpoint suffix ("blob.core.windows.net").
func Propose(site Site, slot string, fns []Function, settings Settings, blobSuffix string) Plan {
	p := Plan{App: circuit.App{ID: AppID(site.Name, slot), DisplayName: site.Name, SubscriptionID: site.Subscription,
		ResourceGroup: site.ResourceGroup, Site: site.Name, Slot: slot, Switch: circuit.SwitchARM, Linux: site.Hosting.Linux, Hosting: site.Hosting}}
	p.App.HostStorage, p.HostStorageFrom, p.HostStorageKeyed = hostStorage(settings, blobSuffix)
	zone := setting(settings, "WEBSITE_TIME_ZONE")
	for _, f := range fns {
		kind := f.Trigger.Kind
		switch {
		case len(p.Circuits)+len(p.Jobs) >= MaxProposed:
			p.Left = append(p.Left, Left{f.Name, fmt.Sprintf("more than %d functions: guard the rest one by one", MaxProposed)})
		case f.Problem != "":
			p.Left = append(p.Left, Left{f.Name, f.Problem})
		case kind == Timer:
			j := ProposedJob{Function: f.Name, TimeZone: zone, Grace: TimerGrace}
			if d, _ := f.Trigger.Get("schedule"); d.Value != "" {
				j.Schedule = d.Value
			} else {
				p.Left = append(p.Left, Left{f.Name, "its schedule could not be read: " + cmp.Or(d.Unresolved, "the binding has none")})
				continue
			}
			p.Jobs = append(p.Jobs, j)
		case kind == HTTP:
			p.Left = append(p.Left, Left{f.Name, "an HTTP trigger answers its callers: a failure is theirs to see, and switching it off refuses every request"})
		case movesOn(kind) || retries(kind):
			c := ProposedCircuit{Function: f.Name, Kind: kind}
			if movesOn(kind) {
				c.Settings, c.Why = MovesOnDefaults, "moves past failures: trips early, on a count"
			} else {
				c.Settings, c.Why = RetriesDefaults, "retries, then sets aside: trips on a sustained share of failures"
			}
			switch kind {
			case EventHubs:
				c.Settings.EventHub = consumes(f.Trigger)
				p.eventHubs(f.Trigger, settings)
			case Queue:
				if d, _ := f.Trigger.Get("queueName"); d.Value != "" {
					c.Settings.Queue = d.Value
				}
			}
			p.Circuits = append(p.Circuits, c)
		default:
			p.Left = append(p.Left, Left{f.Name, "Fusebox has no defaults for a " + cmp.Or(f.Trigger.Type, "trigger it cannot read") + ": create its circuit by hand"})
		}
	}
	if p.EventHubsFrom == "" && hasKind(fns, EventHubs) {
		p.EventHubsFrom = "no identity-based namespace setting was found"
	}
	return p
}

func movesOn(kind string) bool { return kind == EventHubs || kind == CosmosDB || kind == Kafka }
func retries(kind string) bool { return kind == ServiceBus || kind == Queue || kind == Blob }

func hasKind(fns []Function, kind string) bool {
	for _, f := range fns {
		if f.Trigger.Kind == kind {
			return true
		}
	}
	return false
}

// consumes is an Event Hubs trigger's hub and consumer group as a
// circuit's EventHub names them ("hub" or "hub/group").
func consumes(t Trigger) string {
	hub, _ := t.Get("eventHubName")
	if hub.Value == "" {
		return ""
	}
	if g, _ := t.Get("consumerGroup"); g.Value != "" && g.Value != "$Default" {
		return hub.Value + "/" + g.Value
	}
	return hub.Value
}

// eventHubs takes the namespace host insight reads lag from: only an
// identity-based connection (<connection>__fullyQualifiedNamespace), so
// no secret is copied; a key-based one is for the operator to paste.
func (p *Plan) eventHubs(t Trigger, settings Settings) {
	conn, _ := t.Get("connection")
	if conn.Setting == "" || p.App.EventHubs != "" {
		return
	}
	name := conn.Setting + "__fullyQualifiedNamespace"
	switch ns := setting(settings, name); {
	case hostName.MatchString(ns):
		p.App.EventHubs, p.EventHubsFrom = ns, "from setting "+name
	case setting(settings, conn.Setting) != "":
		p.EventHubsFrom = "connection " + conn.Setting + " is key-based: paste a Listen connection string on the app's host page to see lag"
	}
}

var hostName = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9.-]{0,250}[a-zA-Z0-9]$`)

// hostStorage reads where the host keeps its state (AzureWebJobsStorage),
// preferring the identity-based settings, which hold no secret.
func hostStorage(settings Settings, blobSuffix string) (value, from string, keyed bool) {
	if settings == nil {
		return "", "the app's settings could not be read", false
	}
	if u := setting(settings, "AzureWebJobsStorage__blobServiceUri"); strings.HasPrefix(u, "https://") {
		return strings.TrimSuffix(u, "/"), "from setting AzureWebJobsStorage__blobServiceUri (identity-based)", false
	}
	if name := setting(settings, "AzureWebJobsStorage__accountName"); accountName.MatchString(name) {
		return "https://" + name + "." + blobSuffix, "from setting AzureWebJobsStorage__accountName (identity-based)", false
	}
	if cs := setting(settings, "AzureWebJobsStorage"); strings.Contains(cs, "AccountName=") && strings.Contains(cs, "AccountKey=") {
		return cs, "from setting AzureWebJobsStorage, a connection string with the account key: stored sealed, never shown again", true
	}
	return "", "the app has no AzureWebJobsStorage setting Fusebox can use", false
}

var accountName = regexp.MustCompile(`^[a-z0-9]{3,24}$`)

// setting is a setting's value, bounded: someone else's data.
func setting(settings Settings, name string) string {
	v := strings.TrimSpace(settings[name])
	if len(v) > 4096 {
		return ""
	}
	return v
}

// AppID proposes an app id from a site's name (and slot): lower case,
// letters, digits and dashes, at most 40 characters.
func AppID(site, slot string) string {
	s := strings.ToLower(site)
	if slot != "" {
		s += "-" + strings.ToLower(slot)
	}
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
		case b.Len() > 0 && !strings.HasSuffix(b.String(), "-"):
			b.WriteByte('-')
		}
	}
	id := strings.Trim(b.String(), "-")
	if len(id) > 40 {
		id = strings.TrimRight(id[:40], "-")
	}
	return id
}

// Inspection is what ARM says of one app for a plan: its functions with
// their triggers, and the few settings a plan reads (PlanSettings).
type Inspection struct {
	Functions []Function
	Settings  Settings
	// Unread says why Settings is nil.
	Unread string
}

// throttleSetting is one of the host's extension or concurrency options,
// set as an app setting.
func throttleSetting(k string) bool {
	return strings.HasPrefix(k, "AzureFunctionsJobHost__extensions__") || strings.HasPrefix(k, "AzureFunctionsJobHost__concurrency__")
}

// PlanSettings keeps of an app's settings only those a plan reads: where
// the host keeps its state, the timers' time zone, the Event Hubs
// triggers' identity-based namespaces, and the host's own extension and
// concurrency options (numbers, which a throttle plan lowers), and the
// OpenTelemetry export's endpoints, protocol and mode (ZeroCodeRefusal).
// The key-based connections those triggers name, and the export's
// headers, are kept as "set", their secret dropped.
func PlanSettings(all Settings, fns []Function) Settings {
	if all == nil {
		return nil
	}
	out := Settings{}
	for k, v := range all {
		switch u := strings.ToUpper(k); {
		case k == "WEBSITE_TIME_ZONE" || strings.HasPrefix(k, "AzureWebJobsStorage") || strings.HasSuffix(k, "__fullyQualifiedNamespace") || throttleSetting(k):
			out[k] = v
		case strings.HasPrefix(u, "OTEL_EXPORTER_OTLP_") && strings.HasSuffix(u, "HEADERS") && v != "":
			out[k] = "set" // a collector's key: what ZeroCodeRefusal needs is that it is there
		case strings.HasPrefix(u, "OTEL_EXPORTER_OTLP_") && (strings.HasSuffix(u, "ENDPOINT") || u == "OTEL_EXPORTER_OTLP_PROTOCOL"),
			u == "AZUREFUNCTIONSJOBHOST__TELEMETRYMODE":
			out[k] = v
		}
	}
	for _, f := range fns {
		if c, ok := f.Trigger.Get("connection"); ok && f.Trigger.Kind == EventHubs && c.Setting != "" && all[c.Setting] != "" {
			out[c.Setting] = "set"
		}
	}
	return out
}

// OwnStores are the host storage settings and Event Hubs settings an
// app's own settings name: its AzureWebJobsStorage (connection string,
// blobServiceUri or accountName), every namespace an identity-based
// connection names (…__fullyQualifiedNamespace) and every connection
// string with an sb:// endpoint. A storage account or namespace a person
// gives for the app is its own only when it is one of these.
func OwnStores(settings Settings, blobSuffix string) (storages, namespaces []string) {
	if u := setting(settings, "AzureWebJobsStorage__blobServiceUri"); u != "" {
		storages = append(storages, u)
	}
	if name := setting(settings, "AzureWebJobsStorage__accountName"); accountName.MatchString(name) {
		storages = append(storages, "https://"+name+"."+blobSuffix)
	}
	if cs := setting(settings, "AzureWebJobsStorage"); cs != "" {
		storages = append(storages, cs)
	}
	for k := range settings {
		v := setting(settings, k)
		switch {
		case strings.HasSuffix(k, "__fullyQualifiedNamespace") && hostName.MatchString(v):
			namespaces = append(namespaces, v)
		case strings.Contains(strings.ToLower(v), "endpoint=sb://"):
			namespaces = append(namespaces, v)
		}
	}
	return storages, namespaces
}
