package web

import (
	"crypto/subtle"
	"errors"
	"io"
	"net/http"
	"regexp"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/fusebox/fusebox/internal/jobs"
	"github.com/fusebox/fusebox/internal/storage"
)

// The ping API answers like Healthchecks.io, so the curl lines people
// already have in crontabs and scripts work by changing the host:
//
//	/ping/<uuid>[/start|/fail|/log|/<exit status>][?rid=<id>]
//	/ping/<ping key>/<slug>[/start|/fail|/log|/<exit status>]
//
// HEAD, GET and POST all count; a POST body (at most 100 kB) is kept as the
// run's log excerpt. Answers are plain text: "OK", or why not.

var (
	uuidPattern = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)
	ridPattern  = regexp.MustCompile(`^[A-Za-z0-9-]{1,64}$`)
)

func (s *Server) ping(c echo.Context) error {
	a, b, cc := c.Param("a"), c.Param("b"), c.Param("c")
	var job jobs.Job
	var err error
	action := ""
	switch {
	case uuidPattern.MatchString(a) && cc == "":
		job, err = s.JobStore.Get(c.Request().Context(), a)
		action = b
	case s.Config.PingKey != "" && b != "" && subtle.ConstantTimeCompare([]byte(a), []byte(s.Config.PingKey.Reveal())) == 1:
		job, err = s.JobStore.BySlug(c.Request().Context(), b)
		action = cc
	default:
		return c.String(http.StatusNotFound, "not found")
	}
	if errors.Is(err, storage.ErrNoJob) {
		return c.String(http.StatusNotFound, "not found")
	}
	if err != nil {
		return c.String(http.StatusServiceUnavailable, "storage is not answering; nothing was stored, retry")
	}
	if job.Paused {
		return c.String(http.StatusConflict, "this job is paused in Fusebox; unpause it to record runs")
	}

	ev, exit := jobs.EventSuccess, -1
	switch action {
	case "":
		exit = 0
	case "start":
		ev = jobs.EventStart
	case "fail":
		ev = jobs.EventFailure
	case "log":
		ev = jobs.EventLog
	default:
		n, err := strconv.Atoi(action)
		if err != nil || n < 0 || n > 255 {
			return c.String(http.StatusNotFound, "not found")
		}
		exit = n
		if n != 0 {
			ev = jobs.EventFailure
		}
	}
	rid := c.QueryParam("rid")
	if rid != "" && !ridPattern.MatchString(rid) {
		return c.String(http.StatusBadRequest, "rid must be 1 to 64 letters, digits or dashes, such as a UUID")
	}
	var body []byte
	if c.Request().Method == http.MethodPost {
		body, err = io.ReadAll(io.LimitReader(c.Request().Body, storage.MaxLog+1))
		if err != nil {
			return c.String(http.StatusBadRequest, "could not read the body")
		}
		if len(body) > storage.MaxLog {
			return c.String(http.StatusRequestEntityTooLarge, "the body is over 100 kB; send a shorter log excerpt")
		}
	}
	now := s.Now()
	if err := s.Runs.Record(c.Request().Context(), job.ID, rid, ev, exit, now, body); err != nil {
		return c.String(http.StatusServiceUnavailable, "storage is not answering; nothing was stored, retry")
	}
	// The status is the scanner's to change, on its next pass: it alone
	// sees the change of status, and mails about it.
	if ev != jobs.EventLog {
		if err := s.JobStore.Touch(c.Request().Context(), job.ID, now); err != nil {
			return c.String(http.StatusServiceUnavailable, "storage is not answering; the run was stored, its job's last run not yet")
		}
	}
	return c.String(http.StatusOK, "OK")
}
