package web

import (
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/fusebox/fusebox/internal/audit"
)

// jobRotatePingToken gives a job a new ping token: the old token, and the
// job's id if it still pinged, stop pinging at once. For a token that
// leaked into a log or a chat.
func (s *JobPages) jobRotatePingToken(c echo.Context) error {
	j, err := s.jobOf(c)
	if err != nil {
		return err
	}
	if j.Internal() {
		return echo.NewHTTPError(http.StatusNotFound, "There is no page here.")
	}
	token, err := s.Jobs.RotatePingToken(c.Request().Context(), j.ID)
	if err != nil {
		return err
	}
	s.pingSecrets.remember(j.ID, token, time.Now())
	p, _ := principal(c)
	actx, cancel := detached(c)
	defer cancel()
	if err := s.Audit.Append(actx, audit.Entry{At: s.Now(), Actor: p.Name, Action: "rotated ping token", Target: j.Name, Job: j.ID,
		Detail: "the old ping URL, and the job's id, no longer ping"}); err != nil {
		return err
	}
	if isAPI(c) {
		j, err = s.Jobs.Get(c.Request().Context(), j.ID)
		if err != nil {
			return err
		}
		return c.JSON(http.StatusOK, map[string]string{"ping_url": s.pingURL(c, j)})
	}
	s.setFlash(c, "rotated")
	return c.Redirect(http.StatusSeeOther, "/jobs/"+j.ID)
}
