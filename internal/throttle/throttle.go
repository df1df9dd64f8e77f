// Package throttle plans how to lower a function app's concurrency when a
// downstream service pushes back, and how to bring it back exactly as it
// was. It decides, from the app's settings as they are, which settings to
// write and to what; it writes nothing and knows nothing of ARM.
//
// The levers are the trigger extensions' own host.json options, set as app
// settings (AzureFunctionsJobHost__extensions__<extension>__<option>),
// which override host.json and so take effect whatever the app's host.json
// says (docs/throttle.md names each option, its default and its limits,
// and where they were read).
package throttle

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Trigger kinds with levers (as internal/fleet names them).
const (
	EventHubs  = "eventHub"
	ServiceBus = "serviceBus"
	Queue      = "queue"
)

// Settings Fusebox writes, as app settings.
const (
	prefix = "AzureFunctionsJobHost__"

	EventHubMaxBatch = prefix + "extensions__eventHubs__maxEventBatchSize"
	EventHubMinBatch = prefix + "extensions__eventHubs__minEventBatchSize"
	EventHubPrefetch = prefix + "extensions__eventHubs__prefetchCount"

	ServiceBusCalls    = prefix + "extensions__serviceBus__maxConcurrentCalls"
	ServiceBusSessions = prefix + "extensions__serviceBus__maxConcurrentSessions"

	QueueBatch     = prefix + "extensions__queues__batchSize"
	QueueThreshold = prefix + "extensions__queues__newBatchThreshold"

	Dynamic        = prefix + "concurrency__dynamicConcurrencyEnabled"
	MaxConcurrency = prefix + "concurrency__maximumFunctionConcurrency"
)

// lever is one option and what its extension assumes when it is absent.
type lever struct {
	setting string
	// absent is the value assumed when the app sets none: the smallest
	// default any supported extension version has, so that a fraction of
	// it never raises what the app runs with (Event Hubs' maxEventBatchSize
	// is 10 in extension 5.x and 100 from 6.0).
	absent func(a App) int
	min    int
	max    int // 0: no upper limit
}

var levers = map[string][]lever{
	EventHubs: {
		{EventHubMaxBatch, func(App) int { return 10 }, 1, 0},
		{EventHubPrefetch, func(App) int { return 300 }, 0, 0},
	},
	ServiceBus: {
		{ServiceBusCalls, func(a App) int { return 16 * a.cores() }, 1, 0},
		{ServiceBusSessions, func(a App) int { return 8 * a.cores() }, 1, 0},
	},
	Queue: {
		{QueueBatch, func(App) int { return 16 }, 1, 32},
		{QueueThreshold, func(App) int { return 8 }, 0, 0},
	},
}

// dynamicKinds are the triggers dynamic concurrency governs; for them, with
// it on, the host ignores the static options above.
var dynamicKinds = []string{ServiceBus, Queue, "blob"}

// App is what a plan reads of a function app.
type App struct {
	// Settings are the app's settings as they are; only the names above
	// are read.
	Settings map[string]string
	// Cores is the instance's processor count, from the learned
	// concurrency snapshot; 0: not known (1 is assumed, the smallest).
	Cores int
	// Functions are the app's functions by trigger kind: an extension's
	// options apply to every function with that trigger.
	Functions map[string][]string
}

func (a App) cores() int { return max(a.Cores, 1) }

// DynamicOn says whether the app runs with dynamic concurrency.
func (a App) DynamicOn() bool {
	v, ok := a.Settings[Dynamic]
	return ok && strings.EqualFold(strings.TrimSpace(v), "true")
}

// Change is one setting a plan writes or removes.
type Change struct {
	Setting string
	Was     string // empty when WasSet is false
	WasSet  bool
	Now     string // empty when Remove
	Remove  bool
}

// Plan is what lowering (or restoring) concurrency writes, and what it
// costs the rest of the app.
type Plan struct {
	Function string
	Kind     string
	Changes  []Change
	// AlsoSlows are the app's other functions an extension's options also
	// apply to.
	AlsoSlows []string
	// Note says what the plan cannot do, or what it found.
	Note string
}

// Empty says the plan writes nothing.
func (p Plan) Empty() bool { return len(p.Changes) == 0 }

// Lower plans running function at share (0 < share < 1) of what its app
// runs with now: each lever of its trigger kind at share of its current
// value (or of the smallest default, when the app sets none), never below
// the option's floor. With dynamic concurrency on, for the triggers it
// governs, the host ignores those options: the plan lowers
// maximumFunctionConcurrency instead (its default 500), which applies to
// every function of the app that dynamic concurrency governs.
func Lower(a App, function, kind string, share float64) Plan {
	p := Plan{Function: function, Kind: kind}
	if share <= 0 || share >= 1 || math.IsNaN(share) {
		p.Note = "a throttle lowers to a share between 0 and 1"
		return p
	}
	if a.DynamicOn() && slices.Contains(dynamicKinds, kind) {
		p.Changes = append(p.Changes, lowered(a, lever{MaxConcurrency, func(App) int { return 500 }, 1, 0}, share))
		for _, k := range dynamicKinds {
			p.AlsoSlows = append(p.AlsoSlows, a.Functions[k]...)
		}
		p.AlsoSlows = others(p.AlsoSlows, function)
		p.Note = "dynamic concurrency is on: the host ignores the trigger's own limits and learns each function's concurrency up to maximumFunctionConcurrency, which this lowers for every function it governs"
		return p
	}
	ls, ok := levers[kind]
	if !ok {
		p.Note = fmt.Sprintf("a %s trigger has no concurrency option Fusebox knows: only tripping stops it", kind)
		return p
	}
	for _, l := range ls {
		if kind == ServiceBus && l.setting == ServiceBusSessions && !sessionsSet(a) {
			// Only session-enabled triggers read it; lowering it for an
			// app that never set it is harmless but says nothing.
			continue
		}
		p.Changes = append(p.Changes, lowered(a, l, share))
	}
	// The host refuses a minimum batch above the maximum.
	if kind == EventHubs {
		if v, ok := intSetting(a, EventHubMinBatch); ok {
			newMax, _ := strconv.Atoi(p.Changes[0].Now)
			if v > newMax {
				p.Changes = append(p.Changes, Change{Setting: EventHubMinBatch, Was: a.Settings[EventHubMinBatch], WasSet: true, Now: strconv.Itoa(newMax)})
			}
		}
	}
	p.AlsoSlows = others(a.Functions[kind], function)
	return p
}

func sessionsSet(a App) bool {
	_, ok := a.Settings[ServiceBusSessions]
	return ok
}

// lowered is one lever at share of its value now.
func lowered(a App, l lever, share float64) Change {
	c := Change{Setting: l.setting}
	base := l.absent(a)
	if v, ok := a.Settings[l.setting]; ok {
		c.Was, c.WasSet = v, true
		if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && n > 0 {
			base = n
		}
	}
	n := max(int(math.Floor(float64(base)*share)), l.min, 1)
	if l.max > 0 {
		n = min(n, l.max)
	}
	c.Now = strconv.Itoa(n)
	return c
}

func intSetting(a App, name string) (int, bool) {
	v, ok := a.Settings[name]
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(strings.TrimSpace(v))
	return n, err == nil
}

func others(fs []string, function string) []string {
	out := slices.DeleteFunc(slices.Clone(fs), func(f string) bool { return f == function })
	slices.Sort(out)
	return slices.Compact(out)
}

// Restore plans putting back exactly what lowered changed, as before
// records it: a setting that was absent is removed, not written with a
// default.
func Restore(lowered Plan) Plan {
	p := Plan{Function: lowered.Function, Kind: lowered.Kind, AlsoSlows: lowered.AlsoSlows}
	for _, c := range lowered.Changes {
		back := Change{Setting: c.Setting, Was: c.Now, WasSet: true}
		if c.WasSet {
			back.Now = c.Was
		} else {
			back.Remove = true
		}
		p.Changes = append(p.Changes, back)
	}
	return p
}

// Ramp is the shares a ramp back up holds in turn after a resume or a
// quiet throttle, each while failures stay under the rule; the last is
// Restore.
var Ramp = []float64{0.25, 0.5}

// Apply returns settings with the plan written: what a read–merge–write
// of the app's settings puts back.
func (p Plan) Apply(settings map[string]string) map[string]string {
	out := make(map[string]string, len(settings)+len(p.Changes))
	for k, v := range settings {
		out[k] = v
	}
	for _, c := range p.Changes {
		if c.Remove {
			delete(out, c.Setting)
			continue
		}
		out[c.Setting] = c.Now
	}
	return out
}

// Text says the plan in words, each change on a line.
func (p Plan) Text() string {
	var b strings.Builder
	if p.Empty() {
		b.WriteString("No setting to change")
		if p.Note != "" {
			b.WriteString(": " + p.Note)
		}
		b.WriteString(".")
		return b.String()
	}
	for _, c := range p.Changes {
		was := "absent"
		if c.WasSet {
			was = c.Was
		}
		switch {
		case c.Remove:
			fmt.Fprintf(&b, "remove %s (now %s; it was absent before)\n", c.Setting, c.Was)
		default:
			fmt.Fprintf(&b, "%s: %s → %s\n", c.Setting, was, c.Now)
		}
	}
	if len(p.AlsoSlows) > 0 {
		fmt.Fprintf(&b, "also applies to %s\n", strings.Join(p.AlsoSlows, ", "))
	}
	if p.Note != "" {
		b.WriteString(p.Note + "\n")
	}
	return strings.TrimRight(b.String(), "\n")
}

// read are the settings a plan reads besides its levers.
var read = []string{EventHubMinBatch, MaxConcurrency, Dynamic}

// Lever says whether name is a setting a plan reads or writes.
func Lever(name string) bool {
	if slices.Contains(read, name) {
		return true
	}
	for _, ls := range levers {
		for _, l := range ls {
			if l.setting == name {
				return true
			}
		}
	}
	return false
}

// Before keeps of an app's settings what a plan for kind reads, as they
// are before it lowers anything: a value, or nil where the setting is
// absent. It is what a throttle records, so that each later step is a
// share of it and the restore puts it back exactly.
func Before(settings map[string]string, kind string) map[string]*string {
	names := slices.Clone(read)
	for _, l := range levers[kind] {
		names = append(names, l.setting)
	}
	out := make(map[string]*string, len(names))
	for _, n := range names {
		if v, ok := settings[n]; ok {
			out[n] = &v
		} else {
			out[n] = nil
		}
	}
	return out
}

// At is what the settings recorded by Before become at share (0 < share
// < 1) of them: the settings to write, each with its new value. A setting
// not in the record (handed back to people) is not written.
func At(before map[string]*string, kind string, share float64) map[string]*string {
	p := Lower(App{Settings: present(before)}, "", kind, share)
	out := make(map[string]*string, len(p.Changes))
	for _, c := range p.Changes {
		if _, recorded := before[c.Setting]; recorded {
			out[c.Setting] = &c.Now
		}
	}
	return out
}

// Back is what puts back the settings At changed: each as it was before,
// nil (remove) where it was absent.
func Back(before map[string]*string, kind string, share float64) map[string]*string {
	p := Restore(Lower(App{Settings: present(before)}, "", kind, share))
	out := make(map[string]*string, len(p.Changes))
	for _, c := range p.Changes {
		if _, recorded := before[c.Setting]; !recorded {
			continue
		}
		if c.Remove {
			out[c.Setting] = nil
			continue
		}
		out[c.Setting] = &c.Now
	}
	return out
}

func present(m map[string]*string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		if v != nil {
			out[k] = *v
		}
	}
	return out
}
