package manifest

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
)

// Action is what a change does.
type Action string

const (
	Create Action = "create"
	Update Action = "update"
	Delete Action = "delete"
	End    Action = "end" // a maintenance window, ended now
)

// Change is one step of a plan.
type Change struct {
	Action Action
	Kind   string // channel, app, circuit, job, maintenance window
	Name   string
	Line   int      // in the file; 0 for what only Fusebox has
	Fields []string // for an update: "threshold: 5 -> 10"
	// Secrets names the variables whose secrets the change sends.
	Secrets []string

	Channel *Channel
	App     *App
	Circuit *Circuit
	Job     *Job
	Window  *Window
	Team    *Team
}

func (c Change) String() string {
	mark := map[Action]string{Create: "+", Update: "~", Delete: "-", End: "-"}[c.Action]
	s := fmt.Sprintf("%s %s %s %s", mark, c.Action, c.Kind, c.Name)
	if c.Line > 0 {
		s += fmt.Sprintf(" (line %d)", c.Line)
	}
	for _, f := range c.Fields {
		s += "\n    " + f
	}
	for _, v := range c.Secrets {
		s += "\n    a secret from $" + v
	}
	return s
}

// Plan is what makes Fusebox match a file.
type Plan struct {
	Changes []Change
	// Unchanged counts the entries already as the file says.
	Unchanged int
	// Kept names what only Fusebox has and stays: everything without
	// prune; apps always (apply never removes an app and its key).
	Kept []string
}

// Empty says whether applying changes nothing.
func (p Plan) Empty() bool { return len(p.Changes) == 0 }

func (p Plan) String() string {
	var b strings.Builder
	for _, c := range p.Changes {
		b.WriteString(c.String() + "\n")
	}
	for _, k := range p.Kept {
		b.WriteString("= kept " + k + "\n")
	}
	fmt.Fprintf(&b, "%d to change, %d unchanged\n", len(p.Changes), p.Unchanged)
	return b.String()
}

// MakePlan compares doc with what Fusebox holds (current): what to create
// and update, in the order references need (channels, apps, circuits,
// jobs, windows), then, with prune, what to remove, in the reverse order.
// A secret whose variable is set is sent, and counts as a change.
func MakePlan(doc, current Doc, prune bool, env Env) Plan {
	var p Plan
	sent := func(names ...string) []string {
		var out []string
		for _, n := range names {
			if v, ok := env(n); n != "" && ok && v != "" {
				out = append(out, n)
			}
		}
		return out
	}
	step := func(kind, name string, line int, have, want any, secrets []string, set func(*Change)) {
		c := Change{Kind: kind, Name: name, Line: line, Secrets: secrets}
		set(&c)
		if reflect.ValueOf(have).IsNil() {
			c.Action = Create
			p.Changes = append(p.Changes, c)
			return
		}
		c.Fields = diff(reflect.ValueOf(have).Elem(), reflect.ValueOf(want).Elem())
		if len(c.Fields) == 0 && len(secrets) == 0 {
			p.Unchanged++
			return
		}
		c.Action = Update
		p.Changes = append(p.Changes, c)
	}

	for i := range doc.Channels {
		ch := &doc.Channels[i]
		var have *Channel
		if j := slices.IndexFunc(current.Channels, func(c Channel) bool { return c.ID == ch.ID }); j >= 0 {
			have = &current.Channels[j]
		}
		step("channel", ch.ID, ch.Line, have, ch, sent(ch.URLEnv), func(c *Change) { c.Channel = ch })
	}
	for i := range doc.Apps {
		a := &doc.Apps[i]
		var have *App
		if j := slices.IndexFunc(current.Apps, func(c App) bool { return c.ID == a.ID }); j >= 0 {
			have = &current.Apps[j]
		}
		step("app", a.ID, a.Line, have, a, sent(a.HostStorageEnv, a.EventHubsEnv), func(c *Change) { c.App = a })
	}
	for i := range doc.Circuits {
		ci := &doc.Circuits[i]
		var have *Circuit
		if j := slices.IndexFunc(current.Circuits, func(c Circuit) bool { return c.App == ci.App && c.Function == ci.Function }); j >= 0 {
			have = &current.Circuits[j]
		}
		step("circuit", ci.String(), ci.Line, have, ci, nil, func(c *Change) { c.Circuit = ci })
	}
	for i := range doc.Jobs {
		jb := &doc.Jobs[i]
		var have *Job
		if j := slices.IndexFunc(current.Jobs, func(c Job) bool { return c.Key() == jb.Key() }); j >= 0 {
			have = &current.Jobs[j]
			jb.ID = have.ID
		}
		step("job", jb.Key(), jb.Line, have, jb, nil, func(c *Change) { c.Job = jb })
	}
	for i := range doc.Maintenance {
		w := &doc.Maintenance[i]
		if slices.ContainsFunc(current.Maintenance, func(c Window) bool { return c.Key() == w.Key() }) {
			p.Unchanged++
			continue
		}
		p.Changes = append(p.Changes, Change{Action: Create, Kind: "maintenance window", Name: w.String(), Line: w.Line, Window: w})
	}

	for i := range doc.Teams {
		t := &doc.Teams[i]
		var have *Team
		if j := slices.IndexFunc(current.Teams, func(c Team) bool { return c.Name == t.Name }); j >= 0 {
			have = &current.Teams[j]
		}
		step("team", t.Name, t.Line, have, t, nil, func(c *Change) { c.Team = t })
	}

	// What only Fusebox has.
	for i := range current.Maintenance {
		w := &current.Maintenance[i]
		if !slices.ContainsFunc(doc.Maintenance, func(c Window) bool { return c.Key() == w.Key() }) {
			p.only(prune, Change{Action: End, Kind: "maintenance window", Name: w.String(), Window: w})
		}
	}
	for i := range current.Jobs {
		jb := &current.Jobs[i]
		if !slices.ContainsFunc(doc.Jobs, func(c Job) bool { return c.Key() == jb.Key() }) {
			p.only(prune, Change{Action: Delete, Kind: "job", Name: jb.Key(), Job: jb})
		}
	}
	for i := range current.Circuits {
		ci := &current.Circuits[i]
		if !slices.ContainsFunc(doc.Circuits, func(c Circuit) bool { return c.App == ci.App && c.Function == ci.Function }) {
			p.only(prune, Change{Action: Delete, Kind: "circuit", Name: ci.String(), Circuit: ci})
		}
	}
	for i := range current.Teams {
		t := current.Teams[i]
		if !slices.ContainsFunc(doc.Teams, func(c Team) bool { return c.Name == t.Name }) {
			p.Kept = append(p.Kept, "team "+t.Name+" (apply never removes a team)")
		}
	}
	for i := range current.Apps {
		a := current.Apps[i]
		if !slices.ContainsFunc(doc.Apps, func(c App) bool { return c.ID == a.ID }) {
			p.Kept = append(p.Kept, "app "+a.ID+" (apply never removes an app)")
		}
	}
	for i := range current.Channels {
		ch := &current.Channels[i]
		if !slices.ContainsFunc(doc.Channels, func(c Channel) bool { return c.ID == ch.ID }) {
			p.only(prune, Change{Action: Delete, Kind: "channel", Name: ch.ID, Channel: ch})
		}
	}
	p.appsFirst()
	return p
}

// appsFirst moves the apps the plan registers ahead of every other change,
// unless they name a channel the plan makes: an id another team holds is
// refused as taken, and then before the file changed anything else.
func (p *Plan) appsFirst() {
	made := map[string]bool{}
	for _, c := range p.Changes {
		if c.Channel != nil && c.Action == Create {
			made[c.Channel.ID] = true
		}
	}
	first := func(c Change) bool {
		if c.App == nil || c.Action != Create {
			return false
		}
		return !slices.ContainsFunc(slices.Concat(c.App.Channels, c.App.EscalateTo), func(id string) bool { return made[id] })
	}
	slices.SortStableFunc(p.Changes, func(a, b Change) int {
		switch fa, fb := first(a), first(b); {
		case fa && !fb:
			return -1
		case fb && !fa:
			return 1
		}
		return 0
	})
}

// only is a change to what only Fusebox has: made with prune, else kept.
func (p *Plan) only(prune bool, c Change) {
	if prune {
		p.Changes = append(p.Changes, c)
		return
	}
	p.Kept = append(p.Kept, c.Kind+" "+c.Name)
}

// diff names the fields of two entries of one type that differ, by their
// names in the file; lists are compared as sets, and fields tagged
// plan:"-" (lines, ids, secrets' variables) not at all.
func diff(have, want reflect.Value) []string {
	var out []string
	t := have.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Tag.Get("plan") == "-" {
			continue
		}
		if f.Anonymous { // an inline part, such as a circuit's Spec
			out = append(out, diff(have.Field(i), want.Field(i))...)
			continue
		}
		a, b := normal(have.Field(i).Interface()), normal(want.Field(i).Interface())
		if !reflect.DeepEqual(a, b) {
			name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			out = append(out, fmt.Sprintf("%s: %v -> %v", name, show(have.Field(i).Interface()), show(want.Field(i).Interface())))
		}
	}
	return out
}

// normal is a field's value as the plan compares it: lists sorted, with
// no list and an empty one the same.
func normal(v any) any {
	if s, ok := v.([]string); ok {
		if len(s) == 0 {
			return []string(nil)
		}
		s = slices.Clone(s)
		slices.Sort(s)
		return s
	}
	return v
}

func show(v any) string {
	switch x := v.(type) {
	case []string:
		return "[" + strings.Join(x, ", ") + "]"
	case string:
		return fmt.Sprintf("%q", x)
	}
	return fmt.Sprint(v)
}
