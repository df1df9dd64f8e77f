// Package views renders Fusebox's pages with templ. Every page is a
// component that takes a typed view model; handlers build the model and
// views only format it. Nothing here reads configuration or storage.
package views

import (
	"fmt"
	"time"
)

// Page is what the layout needs on every page.
type Page struct {
	Title string
	Nav   string // which navigation entry is current: overview, circuits, jobs, locks, audit
	User  *User  // nil when nobody is signed in
	CSRF  string // token for forms on this page
	Flash *Flash
	// Notice says why a signed-in person sees nothing: in no team.
	Notice string
	Asset  func(name string) string // cache-busted URL of a static file
	Now    time.Time
}

// User is the signed-in person, as the header shows them.
type User struct {
	Name string
	Role string // the highest held anywhere: none, viewer, operator or admin
	// Holds says what, for the header: "admin", "operator of billing".
	Holds string
}

// Flash is a one-time message carried across a redirect.
type Flash struct {
	Kind string // success or error
	Text string
}

// navItem is one entry of the top navigation.
type navItem struct{ Key, Label, Href string }

var navItems = []navItem{
	{"overview", "Overview", "/"},
	{"circuits", "Circuits", "/circuits"},
	{"downstreams", "Downstreams", "/downstreams"},
	{"apps", "Apps", "/apps"},
	{"notifications", "Notifications", "/notifications"},
	{"channels", "Channels", "/channels"},
	{"jobs", "Jobs", "/jobs"},
	{"locks", "Locks", "/locks"}, // admins only
	{"audit", "Audit", "/audit"},
	{"tokens", "Tokens", "/tokens"}, // operators and admins
	{"alerts", "Alerts", "/alerts"}, // admins only
	{"teams", "Teams", "/teams"},    // admins only
}

// shown says whether n is for user: Tokens are for operators and admins,
// Locks and Teams for admins.
func (n navItem) shown(user *User) bool {
	switch n.Key {
	case "tokens":
		return user.Role == "operator" || user.Role == "admin"
	case "locks", "teams", "alerts":
		return user.Role == "admin"
	}
	return true
}

func current(p Page, key string) string {
	if p.Nav == key {
		return "page"
	}
	return ""
}

// ago formats how long before now t was, for people.
func ago(now, t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	d := now.Sub(t)
	switch {
	case d < -time.Minute:
		return "in the future"
	case d < 10*time.Second:
		// A few seconds ahead is another clock's skew (the storage
		// service stamps blobs with its own), not the future.
		return "just now"
	case d < time.Minute:
		return fmt.Sprintf("%d s ago", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%d min ago", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%d h ago", int(d.Hours()))
	}
	return fmt.Sprintf("%d days ago", int(d.Hours()/24))
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

func itoa(n int) string { return fmt.Sprint(n) }

// until formats how long after now t is, for people.
func until(now, t time.Time) string {
	d := t.Sub(now)
	switch {
	case d <= time.Second:
		return "now"
	case d < time.Minute:
		return fmt.Sprintf("in %d s", int(d.Seconds()))
	case d < time.Hour-30*time.Second:
		return fmt.Sprintf("in %d min", int(d.Minutes()+0.5))
	case d < 48*time.Hour:
		return fmt.Sprintf("in %d h", int(d.Hours()+0.5))
	}
	return fmt.Sprintf("in %d days %d h", int(d.Hours())/24, int(d.Hours())%24)
}

// Ago is ago for handlers that build words for a page.
func Ago(now, t time.Time) string { return ago(now, t) }

// plural picks the word for n.
func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// Until is until for handlers that build words for a page.
func Until(now, t time.Time) string { return until(now, t) }
