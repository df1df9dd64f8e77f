package web

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/fusebox/fusebox/internal/access"
	"github.com/fusebox/fusebox/internal/audit"
	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/jobs"
	"github.com/fusebox/fusebox/internal/spoken"
	"github.com/fusebox/fusebox/internal/views"
)

// The form's datetime-local inputs send minutes, or seconds when a browser
// adds them; both are read as UTC.
var localLayouts = []string{"2006-01-02T15:04", "2006-01-02T15:04:05"}

func parseLocal(v string) (time.Time, bool) {
	for _, l := range localLayouts {
		if t, err := time.ParseInLocation(l, v, time.UTC); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}

// maintenanceList shows the maintenance windows and, to operators, the
// form that adds one.
func (s *WindowPages) maintenanceList(c echo.Context) error {
	now := s.Now().UTC()
	return s.renderMaintenance(c, http.StatusOK, views.WindowForm{
		From: now.Format(localLayouts[0]), Until: now.Add(time.Hour).Format(localLayouts[0]),
	})
}

func (s *WindowPages) renderMaintenance(c echo.Context, code int, form views.WindowForm) error {
	ctx := c.Request().Context()
	ws, err := s.Windows.Windows(ctx)
	if err != nil {
		return err
	}
	apps, err := s.Apps.List(ctx)
	if err != nil {
		return err
	}
	m := views.Maintenance{Page: s.page(c, "Maintenance windows", "jobs"), CanAct: scopeOf(c).ActsAnywhere(), Form: form}
	for _, a := range scopeOf(c).Operated(apps) {
		m.Apps = append(m.Apps, a.ID)
	}
	now := s.Now()
	sc, owners := scopeOf(c), access.TeamOf(apps)
	for _, w := range ws {
		if !sc.SeesWindow(owners, w) {
			continue
		}
		st := w.State(now)
		row := views.WindowRow{ID: w.ID, App: w.AppID, Reason: w.Reason, By: w.CreatedBy, From: w.From, Until: w.Until,
			State: st, Tone: windowTones[st]}
		if w.Recurring() {
			row.Recurs = fmt.Sprintf("%s (%s) for %s", w.Recurs, w.TimeZone, spoken.Duration(w.Duration))
			row.Next = w.Next(now, 3)
		}
		m.Rows = append(m.Rows, row)
	}
	return render(c, code, views.MaintenancePage(m))
}

// maintenanceCreate adds a window.
func (s *WindowPages) maintenanceCreate(c echo.Context) error {
	form := views.WindowForm{App: strings.TrimSpace(c.FormValue("app")), From: strings.TrimSpace(c.FormValue("from")),
		Until: strings.TrimSpace(c.FormValue("until")), Reason: strings.TrimSpace(c.FormValue("reason")),
		Recurs: strings.TrimSpace(c.FormValue("recurs")), TimeZone: strings.TrimSpace(c.FormValue("time_zone")), Duration: strings.TrimSpace(c.FormValue("duration"))}
	p, _ := principal(c)
	w := jobs.Window{ID: jobs.NewID(), AppID: form.App, Reason: form.Reason, CreatedBy: p.Name}
	errs := map[string]string{}
	var ok bool
	if w.From, ok = parseLocal(form.From); !ok && form.From != "" {
		errs["from"] = "Give a date and time such as 2026-11-30T22:00."
	}
	if w.Until, ok = parseLocal(form.Until); !ok && form.Until != "" {
		errs["until"] = "Give a date and time such as 2026-11-30T23:30."
	}
	for k, v := range recurrence(&w, form.Recurs, form.TimeZone, form.Duration) {
		errs[k] = v
	}
	if len(errs) == 0 {
		problems, err := s.checkWindow(c, w)
		if err != nil {
			return err
		}
		errs = problems
	}
	if len(errs) > 0 {
		form.Errors = errs
		return s.renderMaintenance(c, http.StatusUnprocessableEntity, form)
	}
	if err := s.saveWindow(c, w); err != nil {
		return err
	}
	s.setFlash(c, "window-set")
	return c.Redirect(http.StatusSeeOther, "/jobs/maintenance")
}

// maintenanceEnd ends a window now, or cancels one that has not begun.
func (s *WindowPages) maintenanceEnd(c echo.Context) error {
	if _, err := s.endWindow(c); err != nil {
		return err
	}
	s.setFlash(c, "window-end")
	return c.Redirect(http.StatusSeeOther, "/jobs/maintenance")
}

var windowTones = map[string]string{"upcoming": "warn", "active": "ok", "ended": "muted", "recurring": "info"}

func windowScope(w jobs.Window) string {
	if w.AppID == "" {
		return "every app"
	}
	return w.AppID
}

// checkWindow returns a message per field that is wrong with a new window.
func (s *WindowPages) checkWindow(c echo.Context, w jobs.Window) (map[string]string, error) {
	errs := w.Validate()
	if errs == nil {
		errs = map[string]string{}
	}
	if _, bad := errs["until"]; !bad && !w.Until.IsZero() && !w.Until.After(s.Now()) {
		errs["until"] = "This window would already be over."
	}
	var apps []circuit.App
	if w.AppID != "" {
		var err error
		if apps, err = s.Apps.List(c.Request().Context()); err != nil {
			return nil, err
		}
	}
	if problem := scopeOf(c).PlaceWindow(apps, w.AppID); problem != "" {
		errs["app"] = problem
	}
	return errs, nil
}

// saveWindow stores a checked window and audits it.
func (s *WindowPages) saveWindow(c echo.Context, w jobs.Window) error {
	ctx, cancel := detached(c)
	defer cancel()
	if err := s.Windows.PutWindow(ctx, w); err != nil {
		return err
	}
	return s.Audit.Append(ctx, audit.Entry{At: s.Now(), Actor: w.CreatedBy, Action: "created maintenance window", Target: windowScope(w),
		Detail: w.From.UTC().Format(time.RFC3339) + " to " + w.Until.UTC().Format(time.RFC3339) + ": " + w.Reason})
}

// endWindow ends the window named in the path, and audits it.
func (s *WindowPages) endWindow(c echo.Context) (jobs.Window, error) {
	ctx, cancel := detached(c)
	defer cancel()
	w, err := s.Windows.EndWindow(ctx, c.Param("id"), s.Now())
	if errors.Is(err, jobs.ErrNoWindow) {
		return jobs.Window{}, echo.NewHTTPError(http.StatusNotFound, "There is no such maintenance window.")
	}
	if err != nil {
		return jobs.Window{}, err
	}
	p, _ := principal(c)
	return w, s.Audit.Append(ctx, audit.Entry{At: s.Now(), Actor: p.Name, Action: "ended maintenance window", Target: windowScope(w), Detail: w.Reason})
}
