package azalerts

import (
	"fmt"
	"slices"
	"strings"
)

// RuleRef is what an alert says of the rule that fired, besides its
// alertRuleID, which the common alert schema's own samples do not carry:
// the rule's name (alertRule), the subscription (named in alertId, and in
// a metric alert's originAlertId), and for a metric alert its resource
// group and type (originAlertId is
// <subscription>_<resourceGroup>_microsoft.insights_metricAlerts_<name>_<n>).
// A field the alert does not say is empty.
type RuleRef struct {
	Subscription, ResourceGroup, Type, Name string
}

// refOf reads what an alert's essentials say of its rule. An originAlertId
// that is not a metric alert's, names another rule or another
// subscription than alertId is not read.
func refOf(alertID, rule, origin string) RuleRef {
	r := RuleRef{Name: rule, Subscription: subscriptionOf(alertID)}
	if !text(origin, MaxID) {
		return r
	}
	sub, rest, ok := strings.Cut(origin, "_")
	if !ok || !guid(sub) || (r.Subscription != "" && !strings.EqualFold(sub, r.Subscription)) {
		return r
	}
	const sep = "_microsoft.insights_metricalerts_"
	lower := strings.ToLower(rest)
	i := strings.Index(lower, sep)
	if i <= 0 || strings.Count(lower, sep) != 1 {
		return r // a resource group may hold "_": only one reading is taken
	}
	tail := rest[i+len(sep):]
	j := strings.LastIndex(tail, "_")
	if j < 0 || !strings.EqualFold(tail[:j], rule) || !integer(tail[j+1:]) {
		return r
	}
	r.Subscription, r.ResourceGroup, r.Type = sub, rest[:i], "metricAlerts"
	return r
}

// subscriptionOf is the subscription an alert id names
// (/subscriptions/<id>/providers/Microsoft.AlertsManagement/alerts/…), or
// "" when it names none (a placeholder is none).
func subscriptionOf(alertID string) string {
	rest, ok := cutPrefixFold(alertID, "/subscriptions/")
	if !ok {
		return ""
	}
	sub, _, _ := strings.Cut(rest, "/")
	if !guid(sub) {
		return ""
	}
	return sub
}

// ruleID is a rule's resource id, read:
// /subscriptions/<sub>/resourceGroups/<rg>/providers/microsoft.insights/<type>/<name>.
type ruleID struct{ subscription, resourceGroup, typ, name string }

func parseRuleID(id string) (ruleID, bool) {
	s := strings.Split(id, "/")
	if len(s) != 9 || s[0] != "" || !strings.EqualFold(s[1], "subscriptions") || !strings.EqualFold(s[3], "resourceGroups") ||
		!strings.EqualFold(s[5], "providers") || !strings.EqualFold(s[6], "microsoft.insights") {
		return ruleID{}, false
	}
	return ruleID{subscription: s[2], resourceGroup: s[4], typ: s[7], name: s[8]}, true
}

// Fits says the rule id names a rule the alert may be about: of its name,
// in its subscription, and in its resource group and of its type where
// the alert says them (compared in any case, as Azure compares resource
// ids). An alert that names no subscription fits no rule: a name alone
// could be any subscription's.
func (r RuleRef) Fits(id string) bool {
	p, ok := parseRuleID(id)
	return ok && r.Subscription != "" && r.Name != "" && strings.EqualFold(p.name, r.Name) && strings.EqualFold(p.subscription, r.Subscription) &&
		(r.ResourceGroup == "" || strings.EqualFold(p.resourceGroup, r.ResourceGroup)) && (r.Type == "" || strings.EqualFold(p.typ, r.Type))
}

// what says what the alert was matched by, such as "name, subscription,
// resource group and type".
func (r RuleRef) what() string {
	if r.ResourceGroup != "" {
		return "its name, subscription, resource group and type"
	}
	return "its name and subscription"
}

// String is the rule as the alert says it, for a person.
func (r RuleRef) String() string {
	s := fmt.Sprintf("%q in subscription %s", r.Name, r.Subscription)
	if r.ResourceGroup != "" {
		s += ", resource group " + r.ResourceGroup
	}
	if r.Type != "" {
		s += ", of type " + r.Type
	}
	return s
}

// maxListed bounds the rules a note lists.
const maxListed = 5

// Matched is the rule an alert is taken as, and in words how it was
// matched or why it matches nothing.
type Matched struct {
	Rule string // a rule id as a circuit or downstream names it; empty: none, the alert acts on nothing
	Note string
}

// Match decides which of the rule ids circuits and downstreams name the
// alert is about: its alertRuleID, when it carries one; else the one named
// rule that fits what it says of its rule (RuleRef.Fits). One that fits
// none, or more than one different rule, matches nothing: an alert that
// cannot tell two rules apart trips neither.
func Match(a Alert, named []string) Matched {
	if a.RuleID != "" {
		if slices.ContainsFunc(named, func(id string) bool { return strings.EqualFold(id, a.RuleID) }) {
			return Matched{Rule: a.RuleID, Note: "matched by its rule id (alertRuleID)"}
		}
		return Matched{Note: "names no circuit or downstream: none names its rule id (alertRuleID) in alert_rules"}
	}
	ref := a.Ref
	if ref.Subscription == "" {
		return Matched{Note: fmt.Sprintf("carries no rule id and no subscription (in alertId or originAlertId) to look for its rule %q in", ref.Name)}
	}
	var fits []string
	seen := map[string]bool{}
	for _, id := range named {
		if k := strings.ToLower(id); !seen[k] && ref.Fits(id) {
			seen[k] = true
			fits = append(fits, id)
		}
	}
	switch len(fits) {
	case 0:
		return Matched{Note: "carries no rule id and no rule of that name: no circuit or downstream names a rule " + ref.String()}
	case 1:
		return Matched{Rule: fits[0], Note: "carries no rule id: matched " + fits[0] + " by " + ref.what()}
	}
	slices.Sort(fits)
	listed := strings.Join(fits[:min(len(fits), maxListed)], ", ")
	if len(fits) > maxListed {
		listed += fmt.Sprintf(" and %d more", len(fits)-maxListed)
	}
	return Matched{Note: "matches more than one rule: " + listed + "; acted on none (it carries no rule id to tell them apart)"}
}

// guid says s is a GUID, as subscriptions are named.
func guid(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i, c := range s {
		switch {
		case i == 8 || i == 13 || i == 18 || i == 23:
			if c != '-' {
				return false
			}
		case !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'):
			return false
		}
	}
	return true
}

// integer says s is a whole number, maybe negative.
func integer(s string) bool {
	s = strings.TrimPrefix(s, "-")
	return s != "" && !strings.ContainsFunc(s, func(c rune) bool { return c < '0' || c > '9' })
}

func cutPrefixFold(s, prefix string) (string, bool) {
	if len(s) < len(prefix) || !strings.EqualFold(s[:len(prefix)], prefix) {
		return s, false
	}
	return s[len(prefix):], true
}
