package web

import (
	"bytes"
	"strings"
	"time"

	"github.com/a-h/templ"
	"github.com/labstack/echo/v4"

	"github.com/fusebox/fusebox/internal/access"
	"github.com/fusebox/fusebox/internal/views"
)

// render writes a component only once it has rendered completely, so a
// failure half-way never leaves half a page behind a 200.
func render(c echo.Context, status int, comp templ.Component) error {
	var buf bytes.Buffer
	if err := comp.Render(c.Request().Context(), &buf); err != nil {
		return err
	}
	c.Response().Header().Set("Cache-Control", "no-store")
	return c.HTMLBlob(status, buf.Bytes())
}

// page fills what the layout needs for the current request.
func (s *core) page(c echo.Context, title, nav string) views.Page {
	p := views.Page{Title: title, Nav: nav, CSRF: csrfToken(c), Asset: s.Assets.URL, Now: s.Now(), Flash: s.takeFlash(c)}
	if pr, ok := principal(c); ok {
		// Pages outside require (a resume link's) have not had teams added.
		if withTeams, err := s.withTeams(c, pr); err == nil {
			pr = withTeams
		}
		p.User = &views.User{Name: pr.Name, Role: pr.Top().String(), Holds: access.For(pr).Holds()}
		p.Notice = access.For(pr).EmptyBecause()
		if p.Notice == "" {
			p.Notice = s.noAppsBecause(c)
		}
	}
	return p
}

// Flash messages travel as a code, never as text from the request, so a
// planted cookie cannot put words on the page.
var flashes = map[string]views.Flash{
	"signed-in":          {Kind: "success", Text: "You are signed in."},
	"sendback-started":   {Kind: "success", Text: "Started: the messages are being taken one batch at a time; this page shows how far it got."},
	"signed-out":         {Kind: "success", Text: "You are signed out."},
	"tripped":            {Kind: "success", Text: "Tripped: the trigger is being switched off."},
	"resumed":            {Kind: "success", Text: "Resumed: the trigger is being switched on; the function continues from its last checkpoint."},
	"adopted":            {Kind: "success", Text: "Drift adopted: the circuit now follows the trigger."},
	"created":            {Kind: "success", Text: "Circuit created. It is closed and counting."},
	"saved":              {Kind: "success", Text: "Settings saved."},
	"deleted":            {Kind: "success", Text: "Circuit deleted."},
	"resent":             {Kind: "success", Text: "The message is queued again."},
	"lock-broken":        {Kind: "success", Text: "The lease is broken: another instance may take the work it guarded."},
	"channel-deleted":    {Kind: "success", Text: "Channel deleted. Circuits and jobs that named it keep their other destinations."},
	"acknowledged":       {Kind: "success", Text: "Acknowledged: reminders about this episode stop. The trigger stays off until someone resumes it."},
	"ran":                {Kind: "success", Text: "The function was started; its run shows here when it pings."},
	"rotated":            {Kind: "success", Text: "The job has a new ping URL; the old one, and the job's id, no longer ping. Change the crontab or script that pings it."},
	"overridden":         {Kind: "success", Text: "Drift overridden: the trigger is being set again."},
	"window-set":         {Kind: "success", Text: "The maintenance window is set."},
	"window-end":         {Kind: "success", Text: "The maintenance window has ended."},
	"downstream-saved":   {Kind: "success", Text: "Downstream saved."},
	"downstream-deleted": {Kind: "success", Text: "Downstream deleted. Its members keep their own circuits."},
	"downstream-tripped": {Kind: "success", Text: "Every member is being switched off, each through its own app."},
	"downstream-resumed": {Kind: "success", Text: "Every member it switched off is being switched back on."},
	"downstream-tried":   {Kind: "success", Text: "Its probe decides: the members go on trial after enough good answers (at once without a probe)."},
}

func (s *core) setFlash(c echo.Context, code string) {
	s.setCookie(c, "fusebox_flash", code, time.Minute)
}

func (s *core) takeFlash(c echo.Context) *views.Flash {
	code := s.cookie(c, "fusebox_flash")
	if code == "" {
		return nil
	}
	s.setCookie(c, "fusebox_flash", "", 0)
	if f, ok := flashes[code]; ok {
		return &f
	}
	return nil
}

func wantsHTML(c echo.Context) bool {
	if isAPI(c) {
		return false
	}
	accept := c.Request().Header.Get("Accept")
	return accept == "" || strings.Contains(accept, "text/html") || strings.Contains(accept, "*/*")
}
