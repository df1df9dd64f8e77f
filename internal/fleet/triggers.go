package fleet

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Trigger kinds Fusebox tells apart. A binding type it does not know keeps
// its own name as the kind.
const (
	EventHubs  = "eventHub"
	ServiceBus = "serviceBus"
	Queue      = "queue"
	Blob       = "blob"
	CosmosDB   = "cosmosDB"
	Kafka      = "kafka"
	Timer      = "timer"
	HTTP       = "http"
)

// EventDriven says a trigger of this kind takes events or messages, so a
// circuit can guard it: everything but timers and HTTP.
func EventDriven(kind string) bool { return kind != Timer && kind != HTTP && kind != "" }

// Bounds on one function's config, which is the app's own data.
const (
	maxConfigBytes = 64 << 10
	maxBindings    = 64
	maxValueLen    = 512
)

// Function is one function of an app and its trigger.
type Function struct {
	Name    string
	Trigger Trigger
	// Problem says why the trigger could not be read; Trigger is then empty.
	Problem string
}

// Trigger is a function's trigger binding.
type Trigger struct {
	Kind string // one of the kinds above, or the binding's own type
	Type string // the binding type as declared, e.g. eventHubTrigger
	// Details are the binding's properties Fusebox uses, in a fixed order
	// per kind.
	Details []Detail
}

// Detail is one property of a trigger binding.
type Detail struct {
	Name  string // the binding property, e.g. eventHubName
	Value string // as resolved; "" when it could not be
	// Setting is the app setting a %Setting% value names; for a
	// connection, the setting (or prefix of settings) that holds it, whose
	// value is never read.
	Setting string
	// Unresolved says why Value is empty, in words for the page.
	Unresolved string
}

// Get returns the detail called name.
func (t Trigger) Get(name string) (Detail, bool) {
	for _, d := range t.Details {
		if d.Name == name {
			return d, true
		}
	}
	return Detail{}, false
}

// What Fusebox reads of each kind: property names as the extensions'
// function.json (and the workers' generated metadata) spell them, first
// the current name, then older ones (Event Hubs' path, Cosmos DB's
// collectionName and connectionStringSetting of extension 3.x).
var kindDetails = map[string][][]string{
	EventHubs:  {{"eventHubName", "path"}, {"consumerGroup"}, {"connection"}},
	ServiceBus: {{"queueName"}, {"topicName"}, {"subscriptionName"}, {"connection"}, {"isSessionsEnabled"}},
	Queue:      {{"queueName"}, {"connection"}},
	Blob:       {{"path"}, {"connection"}, {"source"}},
	CosmosDB:   {{"databaseName"}, {"containerName", "collectionName"}, {"leaseContainerName", "leaseCollectionName"}, {"connection", "connectionStringSetting"}},
	Kafka:      {{"topic"}, {"consumerGroup"}, {"brokerList"}},
	Timer:      {{"schedule"}},
	HTTP:       {{"route"}, {"methods"}, {"authLevel"}},
}

// Settings are an app's settings, for %Setting% values; nil when Fusebox
// could not read them.
type Settings map[string]string

// ErrNoTrigger is a function config with no trigger binding.
var ErrNoTrigger = errors.New("fleet: the function declares no trigger")

// ParseTrigger reads the trigger of a function's config ({"bindings":
// [...]}, as ARM returns it), resolving %Setting% values from settings.
// unread says why settings is nil (what a Reader role cannot list).
func ParseTrigger(config []byte, settings Settings, unread string) (Trigger, error) {
	if len(config) > maxConfigBytes {
		return Trigger{}, fmt.Errorf("fleet: the function's config is over %d kB", maxConfigBytes>>10)
	}
	var cfg struct {
		Bindings []map[string]any `json:"bindings"`
	}
	if err := json.Unmarshal(config, &cfg); err != nil {
		return Trigger{}, errors.New("fleet: the function's config is not the JSON of a function.json")
	}
	if len(cfg.Bindings) > maxBindings {
		return Trigger{}, fmt.Errorf("fleet: the function declares over %d bindings", maxBindings)
	}
	for _, b := range cfg.Bindings {
		typ, _ := b["type"].(string)
		if !strings.HasSuffix(strings.ToLower(typ), "trigger") || len(typ) > maxValueLen {
			continue
		}
		t := Trigger{Type: typ, Kind: kindOf(typ)}
		for _, names := range kindDetails[t.Kind] {
			if d, ok := detail(b, names, settings, unread); ok {
				t.Details = append(t.Details, d)
			}
		}
		return t, nil
	}
	return Trigger{}, ErrNoTrigger
}

// kindOf names a binding type's kind: "eventHubTrigger" is EventHubs, and
// case does not matter (the Java and .NET workers write EventHubTrigger).
func kindOf(typ string) string {
	base := strings.TrimSuffix(strings.ToLower(typ), "trigger")
	for kind := range kindDetails {
		if strings.ToLower(kind) == base {
			return kind
		}
	}
	return typ
}

func detail(b map[string]any, names []string, settings Settings, unread string) (Detail, bool) {
	for _, name := range names {
		raw, ok := lookup(b, name)
		if !ok {
			continue
		}
		d := Detail{Name: names[0], Value: text(raw)}
		if len(d.Value) > maxValueLen {
			return Detail{Name: names[0], Unresolved: fmt.Sprintf("its value is over %d characters", maxValueLen)}, true
		}
		if strings.HasPrefix(strings.ToLower(names[0]), "connection") {
			// A connection names settings that hold a secret or an
			// identity's endpoint: say which, never read them.
			d.Setting, d.Value = d.Value, ""
			return d, true
		}
		if ref, isRef := reference(d.Value); isRef {
			d.Setting, d.Value = ref, ""
			switch v, ok := settings[ref]; {
			case settings == nil:
				d.Unresolved = "the app's settings were not read: " + unread
			case !ok:
				d.Unresolved = "the app has no setting " + ref
			case len(v) > maxValueLen:
				d.Unresolved = fmt.Sprintf("setting %s is over %d characters", ref, maxValueLen)
			default:
				d.Value = v
			}
		}
		return d, true
	}
	return Detail{}, false
}

// lookup finds a property by name, ignoring case as the host does.
func lookup(b map[string]any, name string) (any, bool) {
	if v, ok := b[name]; ok {
		return v, true
	}
	for k, v := range b {
		if strings.EqualFold(k, name) {
			return v, true
		}
	}
	return nil, false
}

func text(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case bool, float64:
		return fmt.Sprint(x)
	case []any:
		parts := make([]string, 0, len(x))
		for _, p := range x {
			parts = append(parts, text(p))
		}
		return strings.Join(parts, ", ")
	}
	return ""
}

// reference reads "%Name%" as the app setting Name.
func reference(v string) (string, bool) {
	if len(v) > 2 && strings.HasPrefix(v, "%") && strings.HasSuffix(v, "%") && !strings.Contains(v[1:len(v)-1], "%") {
		return v[1 : len(v)-1], true
	}
	return "", false
}
