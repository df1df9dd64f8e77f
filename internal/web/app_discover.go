package web

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/views"
)

// appDiscover lists the function apps Fusebox can see in the surveyed
// subscriptions, and which of them it guards; operators get a Register
// link filled from what ARM said.
func (s *AppPages) appDiscover(c echo.Context) error {
	m := views.Discover{Page: s.page(c, "Discover function apps", "apps"), CanAct: scopeOf(c).ActsAnywhere()}
	if s.Fleet == nil {
		m.Off = "Fusebox surveys no subscription: set FUSEBOX_DISCOVER_SUBSCRIPTIONS to the subscriptions to list, and give Fusebox's identity Reader on them (deploy/azure/discovery.bicep)."
		return render(c, http.StatusOK, views.DiscoverPage(m))
	}
	sv, at, err := s.Fleet.Latest(c.Request().Context())
	if err != nil {
		return err
	}
	ts, err := s.allTeams(c)
	if err != nil {
		return err
	}
	m.TakenAt = at.UTC().Format("Mon 2 Jan 15:04:05 MST")
	m.Unguarded, m.Cut = sv.Unguarded(), sv.Cut
	for _, site := range sv.Sites {
		hosting := planNames[site.Hosting.Plan]
		if site.Hosting.Linux {
			hosting += ", Linux"
		} else {
			hosting += ", Windows"
		}
		row := views.DiscoverRow{Subscription: site.Subscription, ResourceGroup: site.ResourceGroup, Site: site.Name,
			Hosting: hosting, Region: site.Region, Linux: site.Hosting.Linux, Guarded: site.Guarded, SlotsUnread: site.SlotsUnread}
		for _, t := range ts {
			if t.Reaches(circuit.App{Switch: circuit.SwitchARM, SubscriptionID: site.Subscription, ResourceGroup: site.ResourceGroup, Hosting: site.Hosting}, false) {
				row.Teams = append(row.Teams, t.Name)
			}
		}
		for _, sl := range site.Slots {
			row.Slots = append(row.Slots, views.DiscoverSlot{Name: sl.Name, Guarded: sl.Guarded})
		}
		m.Rows = append(m.Rows, row)
	}
	for _, r := range sv.Refused {
		m.Refused = append(m.Refused, views.DiscoverRefusal{Subscription: r.Subscription, Reason: r.Reason})
	}
	return render(c, http.StatusOK, views.DiscoverPage(m))
}

// planNames say the hosting plans as the portal does.
var planNames = map[string]string{circuit.PlanAppService: "App Service", circuit.PlanFlex: "Flex Consumption", circuit.PlanContainerApps: "Container Apps"}
