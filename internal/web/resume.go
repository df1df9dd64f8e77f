package web

import (
	"errors"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/fusebox/fusebox/internal/access"
	"github.com/fusebox/fusebox/internal/alerts"
	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/spoken"
	"github.com/fusebox/fusebox/internal/views"
)

// Resume links come from e-mail. Mail scanners open every link they see,
// so GET only shows the circuit and a button; only the POST that button
// makes, with the page's CSRF token, resumes anything.

// resumeShow shows what a resume link is about.
func (s *LinkPages) resumeShow(c echo.Context) error {
	link, ci, err := s.resumeLink(c)
	if err != nil {
		return err
	}
	return s.renderResume(c, link, ci, false, "")
}

// resumeSubmit resumes the circuit a link names.
func (s *LinkPages) resumeSubmit(c echo.Context) error {
	link, ci, err := s.resumeLink(c)
	if err != nil {
		return err
	}
	actor := "resume link: " + link.Recipient
	if p, ok := principal(c); ok {
		actor = p.Name + " (resume link sent to " + link.Recipient + ")"
	}
	claim := claimOf(link, ci)
	next, replayed, err := s.switches.resumeAs(c.Request().Context(), c.FormValue("from"), ci, actor, "resumed via e-mail link by "+link.Recipient, &claim)
	if circuit.IsLinkRefusal(err) {
		return linkRefused(err)
	}
	if err != nil {
		return err
	}
	return s.renderResume(c, link, next, true, replayed)
}

// resumeAck acknowledges the episode a link names: its reminders stop and
// the trigger stays off. Like resuming, only the page's POST does it.
func (s *LinkPages) resumeAck(c echo.Context) error {
	link, ci, err := s.resumeLink(c)
	if err != nil {
		return err
	}
	actor := "resume link: " + link.Recipient
	if p, ok := principal(c); ok {
		actor = p.Name + " (link sent to " + link.Recipient + ")"
	}
	next, err := s.Breakers.Acknowledge(c.Request().Context(), ci.AppID, ci.Function, actor)
	if err != nil {
		return err
	}
	return s.renderResume(c, link, next, false, "")
}

func claimOf(l alerts.Link, ci circuit.Circuit) circuit.LinkClaim {
	return circuit.LinkClaim{AppID: ci.AppID, Function: ci.Function, Episode: l.Episode, Incarnation: l.Incarnation, Recipient: l.Recipient}
}

// linkRefused says, for a person, why a link no longer acts.
func linkRefused(err error) error {
	msg := "This link belongs to an episode of the circuit that has ended: it was resumed or changed since. Open the circuit in Fusebox to see where it stands."
	switch {
	case errors.Is(err, circuit.ErrRecreated):
		msg = "The circuit this link was sent for was deleted; the circuit there now is another one. Open it in Fusebox to see where it stands."
	case errors.Is(err, circuit.ErrNotRecipient):
		msg = "The address this link was sent to no longer receives this circuit's alerts, so the link no longer acts. Sign in to Fusebox to resume the circuit."
	case errors.Is(err, circuit.ErrForcedByHand):
		msg = "An operator switched this trigger off by hand. Only an operator signed in to Fusebox can resume it."
	}
	return echo.NewHTTPError(http.StatusGone, msg)
}

// resumeLink checks the link in the path against the key and the circuit's
// current episode.
func (s *LinkPages) resumeLink(c echo.Context) (alerts.Link, circuit.Circuit, error) {
	link, ci, app, err := s.linkOf(c, alerts.ActionResume, "resume")
	if err != nil {
		return link, ci, err
	}
	// Checked here to show the right page; ResumeByLink checks again inside
	// the write that resumes.
	if err := circuit.CheckLink(ci, app, claimOf(link, ci)); err != nil {
		return link, ci, linkRefused(err)
	}
	return link, ci, nil
}

// linkOf verifies the signed link in the path for action (and, where the
// configuration asks for it, that an operator is signed in), and reads
// the circuit and app it names. noun names the link in what people read.
func (s *LinkPages) linkOf(c echo.Context, action, noun string) (alerts.Link, circuit.Circuit, circuit.App, error) {
	if s.Links == nil {
		return alerts.Link{}, circuit.Circuit{}, circuit.App{}, echo.NewHTTPError(http.StatusNotFound)
	}
	if s.Config.Mail.ResumeSignIn {
		p, ok := principal(c)
		if !ok {
			if c.Request().Method == http.MethodGet {
				return alerts.Link{}, circuit.Circuit{}, circuit.App{}, c.Redirect(http.StatusSeeOther, "/login?next="+url.QueryEscape(c.Request().URL.Path))
			}
			return alerts.Link{}, circuit.Circuit{}, circuit.App{}, echo.NewHTTPError(http.StatusUnauthorized, "Sign in first.")
		}
		if !access.For(p).ActsAnywhere() {
			return alerts.Link{}, circuit.Circuit{}, circuit.App{}, echo.NewHTTPError(http.StatusForbidden, "What this link does needs the operator role.")
		}
	}
	link, err := s.Links.Verify(c.Param("token"), s.Now())
	switch {
	case errors.Is(err, alerts.ErrExpired):
		return link, circuit.Circuit{}, circuit.App{}, echo.NewHTTPError(http.StatusGone, "This "+noun+" link has expired. Open the circuit in Fusebox to see where it stands.")
	case err != nil || link.Action != action:
		return link, circuit.Circuit{}, circuit.App{}, echo.NewHTTPError(http.StatusBadRequest, "This link is not a valid Fusebox "+noun+" link. It may have been cut short by your mail program: copy the whole link.")
	}
	appID, function, _ := strings.Cut(link.Circuit, "/")
	ci, err := s.Circuits.Get(c.Request().Context(), appID, function)
	if errors.Is(err, circuit.ErrNoCircuit) {
		return link, ci, circuit.App{}, echo.NewHTTPError(http.StatusGone, "The circuit this link is about no longer exists.")
	}
	if err != nil {
		return link, ci, circuit.App{}, err
	}
	app, err := s.Apps.Get(c.Request().Context(), appID)
	if err == nil && s.Config.Mail.ResumeSignIn {
		// Signed in as asked: an operator of this app's team.
		p, _ := principal(c)
		if p, err = s.withTeams(c, p); err == nil && !access.For(p).Acts(app.Team) {
			err = echo.NewHTTPError(http.StatusForbidden, "What this link does needs the operator role on this app's team.")
		}
	}
	return link, ci, app, err
}

func (s *LinkPages) renderResume(c echo.Context, link alerts.Link, ci circuit.Circuit, done bool, replayed string) error {
	ctx := c.Request().Context()
	now := s.Now()
	rows, _, err := s.Window.Window(ctx, now.Add(-ci.Window).Truncate(time.Second), now)
	if err != nil {
		return err
	}
	counts := circuit.CountRows(rows, []circuit.Circuit{ci}, now)
	apps, err := s.Apps.List(ctx)
	if err != nil {
		return err
	}
	m := views.Resume{Page: s.page(c, "Resume "+ci.Function, ""), App: appName(apps, ci.AppID), Function: ci.Function,
		State: ci.State.String(), Tone: stateTone(ci.State), Reason: ci.Reason, Count: counts[ci.ID()].Counted, Threshold: ci.Threshold,
		Window: spoken.Duration(ci.Window), WindowBars: addedUp(windowBars(rows, ci.ID(), ci.Window, now)), WindowThreshold: countThreshold(ci), Recipient: link.Recipient,
		Expires: link.Expires, Done: done, Token: c.Param("token"), Acked: ackedText(ci), Host: withoutProblems(s.hosts.hostPanel(ctx, ci)), SetAside: s.hosts.functionSetAside(c, ci.AppID, ci.Function),
		Replayed: replayed}
	if !done {
		m.Errors, m.ErrorsOther, _ = s.pages.errorGroups(ctx, ci, now)
		m.Replay = s.switches.replayPanel(ctx, ci)
	}
	return render(c, http.StatusOK, views.ResumePage(m))
}
