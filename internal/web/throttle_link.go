package web

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/fusebox/fusebox/internal/alerts"
	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/throttle"
	"github.com/fusebox/fusebox/internal/views"
)

// throttleShow opens an Apply link: what the throttle would write, and a
// button. A GET changes nothing, so a mail scanner that follows the link
// applies nothing.
func (s *LinkPages) throttleShow(c echo.Context) error {
	link, ci, err := s.throttleLink(c)
	if err != nil {
		return err
	}
	return s.renderThrottleAsk(c, link, ci, false)
}

// throttleSubmit applies the throttle an Apply link was sent for.
func (s *LinkPages) throttleSubmit(c echo.Context) error {
	link, ci, err := s.throttleLink(c)
	if err != nil {
		return err
	}
	actor := "apply link: " + link.Recipient
	if p, ok := principal(c); ok {
		actor = p.Name + " (apply link sent to " + link.Recipient + ")"
	}
	next, err := s.Breakers.ThrottleByLink(c.Request().Context(), claimOf(link, ci), actor)
	if circuit.IsLinkRefusal(err) || errors.Is(err, circuit.ErrNotAsked) {
		return errQuestionEnded
	}
	if err != nil {
		return err
	}
	return s.renderThrottleAsk(c, link, next, true)
}

// throttleLink checks the link in the path against the key and the
// circuit's current episode, as resumeLink does for resume links.
func (s *LinkPages) throttleLink(c echo.Context) (alerts.Link, circuit.Circuit, error) {
	link, ci, app, err := s.linkOf(c, alerts.ActionThrottle, "apply")
	if err != nil {
		return link, ci, err
	}
	if err := circuit.CheckThrottleLink(ci, app, claimOf(link, ci)); err != nil {
		return link, ci, errQuestionEnded
	}
	return link, ci, nil
}

// errQuestionEnded is an Apply link whose question was answered or ended.
var errQuestionEnded = echo.NewHTTPError(http.StatusGone, "This link belongs to a throttle question that has been answered or has ended: the circuit changed since. Open the circuit in Fusebox to see where it stands.")

func (s *LinkPages) renderThrottleAsk(c echo.Context, link alerts.Link, ci circuit.Circuit, done bool) error {
	ctx := c.Request().Context()
	apps, err := s.Apps.List(ctx)
	if err != nil {
		return err
	}
	m := views.ThrottleAsk{Page: s.page(c, "Throttle "+ci.Function, ""), App: appName(apps, ci.AppID), Function: ci.Function, Reason: ci.Reason,
		Rule: upperFirst(ci.ThrottleText()), Recipient: link.Recipient, Token: c.Param("token"), Done: done}
	if !done {
		m.Plan = s.throttlePlanOf(ctx, appOf(apps, ci.AppID), ci)
		m.Cost = appOf(apps, ci.AppID).SwitchCost(ci.Function, nil)
	}
	return render(c, http.StatusOK, views.ThrottleAskPage(m))
}

// throttlePlanOf is what lowering ci's function to the ramp's lowest share
// would write, from the app's settings as its switch reads them now
// (bounded: a slow ARM costs the page the plan, not the page).
func (s *LinkPages) throttlePlanOf(ctx context.Context, app circuit.App, ci circuit.Circuit) []string {
	if ci.ThrottleKind() == "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	settings, err := s.Switches.Settings(ctx, app)
	if err != nil {
		return nil
	}
	p := throttle.Lower(throttle.App{Settings: settings}, ci.Function, ci.ThrottleKind(), throttle.Ramp[0])
	return strings.Split(p.Text(), "\n")
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
