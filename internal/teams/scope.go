package teams

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/fusebox/fusebox/internal/circuit"
)

// Scope is where in Azure a team's apps may live: a whole subscription,
// one resource group of it, or one Container Apps environment (whose
// apps, container apps and Functions sites alike, may sit in any
// resource group). Fusebox's own identity may rewrite every
// app it can reach, so a team's reach ends at the scopes an admin gave it
// (as Argo CD's projects list the destinations they may deploy to), not
// at the records it owns.
type Scope struct {
	Subscription  string // a GUID, lower case
	ResourceGroup string // empty: the whole subscription; lower case
	// Environment is a Container Apps environment's name (lower case) in
	// the subscription and resource group above; empty: not one.
	Environment string
}

// Bounds of what a team's scopes cost: a team lists at most MaxScopes,
// each at most MaxScopeLen bytes, so parsing and checking them is cheap
// whatever an admin types.
const (
	MaxScopes   = 50
	MaxScopeLen = 300 // an environment's id is about 270 at most
)

var (
	subscriptionRE = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)
	// ARM's rule for resource group names: 1 to 90 letters, digits,
	// underscores, dashes, periods and parentheses, not ending in a period.
	resourceGroupRE = regexp.MustCompile(`^[a-z0-9_().-]{0,89}[a-z0-9_()-]$`)
	// Container Apps' rule for environment names: 2 to 60 lower-case
	// letters, digits and dashes, starting with a letter.
	environmentRE = regexp.MustCompile(`^[a-z][a-z0-9-]{0,58}[a-z0-9]$`)
)

// environments is how ARM writes a Container Apps environment after its
// resource group, lower cased.
const environments = "/providers/microsoft.app/managedenvironments/"

// ParseScope reads a scope as ARM writes it,
// /subscriptions/<id> or /subscriptions/<id>/resourceGroups/<name>, or
// shortened to <id> or <id>/<name>; or a Container Apps environment's id,
// /subscriptions/<id>/resourceGroups/<name>/providers/Microsoft.App/managedEnvironments/<name>.
// ARM's ids are case-insensitive.
func ParseScope(s string) (Scope, error) {
	s = strings.TrimSpace(s)
	if len(s) > MaxScopeLen {
		return Scope{}, fmt.Errorf("a scope is at most %d characters", MaxScopeLen)
	}
	low := strings.ToLower(strings.TrimSuffix(s, "/"))
	var sub, rg, env string
	if before, name, ok := strings.Cut(low, environments); ok {
		if !environmentRE.MatchString(name) {
			return Scope{}, fmt.Errorf("%q: %q is not a Container Apps environment's name (2 to 60 lower-case letters, digits and dashes)", s, name)
		}
		low, env = before, name
		if !strings.Contains(low, "/resourcegroups/") {
			return Scope{}, fmt.Errorf("%q: an environment's scope is its id, /subscriptions/<id>/resourceGroups/<name>/providers/Microsoft.App/managedEnvironments/<name>", s)
		}
	}
	if rest, ok := strings.CutPrefix(low, "/subscriptions/"); ok {
		var hasRG bool
		sub, rg, hasRG = strings.Cut(rest, "/resourcegroups/")
		if !hasRG && strings.Contains(rest, "/") {
			return Scope{}, fmt.Errorf("%q: a scope is /subscriptions/<id> or /subscriptions/<id>/resourceGroups/<name>", s)
		}
		if hasRG && rg == "" {
			return Scope{}, fmt.Errorf("%q names no resource group after resourceGroups/", s)
		}
	} else {
		sub, rg, _ = strings.Cut(low, "/")
	}
	if !subscriptionRE.MatchString(sub) {
		return Scope{}, fmt.Errorf("%q: a scope starts with a subscription id (a GUID), as /subscriptions/<id>", s)
	}
	if rg != "" && !resourceGroupRE.MatchString(rg) {
		return Scope{}, fmt.Errorf("%q: %q is not a resource group's name (letters, digits, _ - . ( ), at most 90, not ending in a period)", s, rg)
	}
	return Scope{Subscription: sub, ResourceGroup: rg, Environment: env}, nil
}

// String is the scope as ARM writes it.
func (s Scope) String() string {
	if s.Environment != "" {
		return "/subscriptions/" + s.Subscription + "/resourceGroups/" + s.ResourceGroup + "/providers/Microsoft.App/managedEnvironments/" + s.Environment
	}
	if s.ResourceGroup == "" {
		return "/subscriptions/" + s.Subscription
	}
	return "/subscriptions/" + s.Subscription + "/resourceGroups/" + s.ResourceGroup
}

// Holds says whether a resource in subscription and resource group lies
// within s; an environment's scope holds none by where it is.
func (s Scope) Holds(subscription, resourceGroup string) bool {
	return s.Environment == "" && strings.EqualFold(s.Subscription, subscription) && (s.ResourceGroup == "" || strings.EqualFold(s.ResourceGroup, resourceGroup))
}

// HoldsApp says whether app lies within s: by its subscription and
// resource group, or, for an environment's scope, by the environment
// ARM said it runs in when it was registered (Hosting.Environment).
func (s Scope) HoldsApp(app circuit.App) bool {
	if s.Environment != "" {
		return app.Hosting.Environment != "" && strings.EqualFold(s.String(), strings.TrimSuffix(app.Hosting.Environment, "/"))
	}
	return s.Holds(app.SubscriptionID, app.ResourceGroup)
}

// HasEnvironments says whether any of t's scopes is a Container Apps
// environment: only then is an app's environment worth asking ARM for.
func (t Team) HasEnvironments() bool {
	return slices.ContainsFunc(t.AllScopes(), func(s Scope) bool { return s.Environment != "" })
}

// ParseScopes reads a list of scopes, one a line or separated by commas;
// a scope given twice counts once.
func ParseScopes(text string) ([]Scope, error) {
	if len(text) > MaxScopes*(MaxScopeLen+2) {
		return nil, fmt.Errorf("a team's scopes are at most %d of %d characters", MaxScopes, MaxScopeLen)
	}
	var out []Scope
	for _, line := range strings.FieldsFunc(text, func(r rune) bool { return r == '\n' || r == ',' || r == '\r' }) {
		if strings.TrimSpace(line) == "" {
			continue
		}
		sc, err := ParseScope(line)
		if err != nil {
			return nil, err
		}
		if !slices.Contains(out, sc) {
			out = append(out, sc)
		}
		if len(out) > MaxScopes {
			return nil, fmt.Errorf("a team has at most %d scopes", MaxScopes)
		}
	}
	return out, nil
}

// FormatScopes writes scopes as ParseScopes reads them, one a line.
func FormatScopes(ss []Scope) string {
	var b strings.Builder
	for _, s := range ss {
		b.WriteString(s.String() + "\n")
	}
	return b.String()
}

// ErrOutOfScope is an app placed where its team may not reach.
var ErrOutOfScope = errors.New("outside its team's scopes")

// Reaches says whether app may belong to t, as Admits does, without the
// words: for pages that only ask.
func (t Team) Reaches(app circuit.App, development bool) bool {
	if app.Switch == circuit.SwitchLocal {
		return development
	}
	return slices.ContainsFunc(t.AllScopes(), func(s Scope) bool { return s.HoldsApp(app) })
}

// Admits says whether app may belong to t: an ARM or Container Apps app
// must lie in one of t's scopes; a local settings file is for
// development only. The error names the scope that is missing.
func (t Team) Admits(app circuit.App, development bool) error {
	switch app.Switch {
	case circuit.SwitchLocal:
		if development {
			return nil
		}
		return fmt.Errorf("%w: team %s may use the local switch only in development", ErrOutOfScope, t.Name)
	}
	scopes := t.AllScopes()
	if slices.ContainsFunc(scopes, func(s Scope) bool { return s.HoldsApp(app) }) {
		return nil
	}
	need := Scope{Subscription: strings.ToLower(app.SubscriptionID), ResourceGroup: strings.ToLower(app.ResourceGroup)}.String()
	if t.HasEnvironments() {
		need += " (in no Container Apps environment of its scopes)"
	}
	if len(scopes) == 0 {
		return fmt.Errorf("%w: team %s has no Azure scopes yet, so its apps cannot be in %s: an admin gives it scopes on the Teams page", ErrOutOfScope, t.Name, need)
	}
	names := make([]string, len(scopes))
	for i, s := range scopes {
		names[i] = s.String()
	}
	return fmt.Errorf("%w: %s is not in team %s's scopes (%s): an admin adds it on the Teams page", ErrOutOfScope, need, t.Name, strings.Join(names, ", "))
}

// Propose is the scopes that would admit a team's apps as they are now,
// one resource group each, for an admin to confirm on upgrade.
func Propose(apps []circuit.App, team string) []Scope {
	var out []Scope
	for _, a := range apps {
		if a.Team != team || a.Switch == circuit.SwitchLocal {
			continue
		}
		sc, err := ParseScope(a.SubscriptionID + "/" + a.ResourceGroup)
		if err == nil && !slices.Contains(out, sc) {
			out = append(out, sc)
		}
	}
	slices.SortFunc(out, func(a, b Scope) int { return strings.Compare(a.String(), b.String()) })
	return out
}
