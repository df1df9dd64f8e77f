// Package fleet is what Fusebox finds of function apps in Azure: the sites
// it can see, how each is hosted, whether it is guarded yet, and each
// function's trigger with its bindings. It knows nothing of ARM; the
// appservice switch lists what it reads into these types.
package fleet

import (
	"cmp"
	"slices"
	"strings"

	"github.com/fusebox/fusebox/internal/circuit"
)

// Bounds on what one survey keeps: ARM's answers are someone else's data.
const (
	// MaxSitesPerSubscription bounds the sites read from one subscription;
	// a survey says when it stopped there.
	MaxSitesPerSubscription = 5000
	// MaxFunctions bounds the functions read of one app.
	MaxFunctions = 1000
)

// Site is a function app Fusebox can see.
type Site struct {
	Subscription  string
	ResourceGroup string
	Name          string
	Region        string
	Hosting       circuit.Hosting
	// Guarded says an app registered in Fusebox names this site.
	Guarded bool
	// Slots are the site's deployment slots (App Service plans only;
	// Flex Consumption and Container Apps have none).
	Slots []Slot
	// SlotsUnread says the slots were not read: ARM refused or was slow,
	// or the subscription has more sites than MaxSlotReads.
	SlotsUnread bool
}

// Slot is a deployment slot of a site, and whether an app names it.
type Slot struct {
	Name    string
	Guarded bool
}

// MaxSlotReads bounds the sites of one subscription whose slots are read
// (one ARM call each) in a survey.
const MaxSlotReads = 200

// Key names a site the way registered apps are matched to it: ARM's names
// are case-insensitive.
func (s Site) Key() string {
	return strings.ToLower(s.Subscription + "/" + s.ResourceGroup + "/" + s.Name)
}

// Refusal is a subscription that could not be listed, and why, in
// Fusebox's words (never ARM's).
type Refusal struct {
	Subscription string
	Reason       string
}

// Survey is what one look at the subscriptions found.
type Survey struct {
	Sites   []Site
	Refused []Refusal
	// Cut names subscriptions with more sites than MaxSitesPerSubscription:
	// the rest are not listed.
	Cut []string
}

// Sort orders the survey for reading: sites by subscription, group and
// name; refusals by subscription.
func (s *Survey) Sort() {
	slices.SortFunc(s.Sites, func(a, b Site) int { return cmp.Compare(a.Key(), b.Key()) })
	slices.SortFunc(s.Refused, func(a, b Refusal) int { return cmp.Compare(a.Subscription, b.Subscription) })
	slices.Sort(s.Cut)
}

// MarkGuarded marks the sites a registered app names (a slot's app
// guards its site's row too: the slot is listed under its site).
func (s *Survey) MarkGuarded(apps []circuit.App) {
	guarded := make(map[string]bool, len(apps))
	for _, a := range apps {
		key := Site{Subscription: a.SubscriptionID, ResourceGroup: a.ResourceGroup, Name: a.Site}.Key()
		guarded[key] = true
		if a.Slot != "" {
			guarded[key+"/"+strings.ToLower(a.Slot)] = true
		}
	}
	for i := range s.Sites {
		site := &s.Sites[i]
		site.Guarded = guarded[site.Key()]
		for j := range site.Slots {
			site.Slots[j].Guarded = guarded[site.Key()+"/"+strings.ToLower(site.Slots[j].Name)]
		}
	}
}

// Unguarded counts the sites no registered app names.
func (s Survey) Unguarded() int {
	n := 0
	for _, site := range s.Sites {
		if !site.Guarded {
			n++
		}
	}
	return n
}
