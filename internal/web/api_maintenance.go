package web

import (
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/fusebox/fusebox/internal/apiwire"
	"github.com/fusebox/fusebox/internal/jobs"
)

func (s *WindowPages) toWindowJSON(w jobs.Window) apiwire.Window {
	out := apiwire.Window{ID: w.ID, App: w.AppID, From: w.From.UTC(), Until: w.Until.UTC(), Reason: w.Reason, CreatedBy: w.CreatedBy, State: w.State(s.Now())}
	if w.Recurring() {
		out.Recurs, out.TimeZone, out.DurationSeconds, out.Next = w.Recurs, w.TimeZone, int(w.Duration/time.Second), w.Next(s.Now(), 5)
	}
	return out
}

// recurrence makes w recurring when recurs is given: each opening lasts
// duration; with no end given it recurs for ten years.
func recurrence(w *jobs.Window, recurs, zone, duration string) map[string]string {
	if recurs == "" {
		return nil
	}
	w.Recurs, w.TimeZone = recurs, zone
	if w.TimeZone == "" {
		w.TimeZone = "UTC"
	}
	d, err := time.ParseDuration(duration)
	if err != nil || d <= 0 {
		return map[string]string{"duration": `Give how long each opening lasts, such as "2h".`}
	}
	w.Duration = d
	if w.Until.IsZero() {
		w.Until = w.From.AddDate(10, 0, 0)
	}
	return nil
}

// apiMaintenanceList lists the maintenance windows, latest start first.
func (s *WindowPages) apiMaintenanceList(c echo.Context) error {
	ws, err := s.Windows.Windows(c.Request().Context())
	if err != nil {
		return err
	}
	owners, err := s.owners(c)
	if err != nil {
		return err
	}
	sc := scopeOf(c)
	out := make([]apiwire.Window, 0, len(ws))
	for _, w := range ws {
		if sc.SeesWindow(owners, w) {
			out = append(out, s.toWindowJSON(w))
		}
	}
	return c.JSON(http.StatusOK, map[string]any{"windows": out})
}

// apiMaintenanceCreate sets a window, for a deploy pipeline to silence
// job alerts while it works: from defaults to now, and a duration may
// stand for until.
func (s *WindowPages) apiMaintenanceCreate(c echo.Context) error {
	var in apiwire.WindowInput
	if err := c.Bind(&in); err != nil {
		return echo.NewHTTPError(http.StatusBadRequest, `The body must be JSON such as {"app": "orders", "duration": "30m", "reason": "deploy 1.4.2"}; times are RFC 3339.`)
	}
	p, _ := principal(c)
	w := jobs.Window{ID: jobs.NewID(), AppID: strings.TrimSpace(in.App), From: in.From, Until: in.Until, Reason: strings.TrimSpace(in.Reason), CreatedBy: p.Name}
	if w.From.IsZero() {
		w.From = s.Now()
	}
	problems := recurrence(&w, strings.TrimSpace(in.Recurs), strings.TrimSpace(in.TimeZone), in.Duration)
	if problems == nil {
		problems = map[string]string{}
	}
	if in.Duration != "" && !w.Recurring() {
		d, err := time.ParseDuration(in.Duration)
		switch {
		case err != nil || d <= 0:
			problems["duration"] = `Give a positive duration such as "30m" or "2h".`
		case !in.Until.IsZero():
			problems["duration"] = "Give until or duration, not both."
		default:
			w.Until = w.From.Add(d)
		}
	}
	if len(problems) == 0 {
		var err error
		if problems, err = s.checkWindow(c, w); err != nil {
			return err
		}
	}
	if len(problems) > 0 {
		return c.JSON(http.StatusUnprocessableEntity, map[string]any{"error": "the maintenance window is not valid", "fields": problems})
	}
	if err := s.saveWindow(c, w); err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, s.toWindowJSON(w))
}

// apiMaintenanceEnd ends a window now, or cancels one that has not begun.
func (s *WindowPages) apiMaintenanceEnd(c echo.Context) error {
	w, err := s.endWindow(c)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, s.toWindowJSON(w))
}
