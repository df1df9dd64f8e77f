package web

import (
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/fusebox/fusebox/internal/audit"
)

// jobRun makes up a missed slot: it runs the job's function once, now,
// through its host's admin API, and records who did it for which slot.
func (s *JobPages) jobRun(c echo.Context) error {
	ctx := c.Request().Context()
	j, err := s.jobOf(c)
	if err != nil {
		return err
	}
	if j.AppID == "" || j.Function == "" {
		return echo.NewHTTPError(http.StatusConflict, "This job names no function app and function, so Fusebox cannot run it.")
	}
	app, err := s.Apps.Get(ctx, j.AppID)
	if err != nil {
		return err
	}
	slot := c.FormValue("slot")
	if _, err := time.Parse(time.RFC3339, slot); err != nil {
		slot = "(no slot given)"
	}
	if err := s.Switches.Run(ctx, app, j.Function); err != nil {
		return echo.NewHTTPError(http.StatusBadGateway, "The function host did not accept the run: "+err.Error()).SetInternal(err)
	}
	p, _ := principal(c)
	actx, cancel := detached(c)
	defer cancel()
	if err := s.Audit.Append(actx, audit.Entry{At: s.Now(), Actor: p.Name, Action: "ran job now", Target: j.Name, Job: j.ID,
		Detail: j.Function + " in " + j.AppID + " for the slot of " + slot}); err != nil {
		return err
	}
	if isAPI(c) {
		return c.JSON(http.StatusAccepted, map[string]string{"status": "started", "function": j.Function, "app": j.AppID})
	}
	s.setFlash(c, "ran")
	return c.Redirect(http.StatusSeeOther, "/jobs/"+j.ID)
}
