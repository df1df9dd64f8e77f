package web

import (
	"crypto/subtle"
	"errors"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"time"

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
// HEAD, GET and POST all count. A POST body's first 100 kB are kept as the
// run's log excerpt; a longer body is cut there and the ping still counts
// (the limit is in the Ping-Body-Limit header of every answer). Answers are
// plain text: "OK", or why not.

var uuidPattern = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

// pingDrainMax is how much of a body past the limit is read and thrown
// away, so that curl, still sending, gets its answer on a healthy
// connection; a larger body has the connection closed after the answer.
const pingDrainMax = 16 << 20

func (s *Server) ping(c echo.Context) error {
	c.Response().Header().Set("Ping-Body-Limit", strconv.Itoa(storage.MaxLog))
	a, b, cc := c.Param("a"), c.Param("b"), c.Param("c")
	var job jobs.Job
	var err error
	action := ""
	switch {
	case uuidPattern.MatchString(a) && cc == "":
		if jobs.InternalID(a) || s.unknownPings.has(a) {
			return c.String(http.StatusNotFound, "not found") // no storage read
		}
		job, err = s.JobStore.Get(c.Request().Context(), a)
		action = b
	case s.Config.PingKey != "" && b != "" && subtle.ConstantTimeCompare([]byte(a), []byte(s.Config.PingKey.Reveal())) == 1:
		job, err = s.JobStore.BySlug(c.Request().Context(), b)
		action = cc
		if errors.Is(err, storage.ErrNoJob) && c.QueryParam("create") == "1" {
			return s.pingCreate(c, b, action)
		}
	default:
		return c.String(http.StatusNotFound, "not found")
	}
	if errors.Is(err, storage.ErrNoJob) {
		if uuidPattern.MatchString(a) { // slug pings need the ping key: no cache for them
			s.unknownPings.add(a)
		}
		return c.String(http.StatusNotFound, "not found")
	}
	if job.Internal() {
		return c.String(http.StatusNotFound, "not found")
	}
	if err != nil {
		return c.String(http.StatusServiceUnavailable, "storage is not answering; nothing was stored, retry")
	}
	if err := s.recordPing(c, job, action); err != nil {
		return ignoreAnswered(err)
	}
	return c.String(http.StatusOK, "OK")
}

// recordPing records one ping of job; it answers the request itself when
// the ping is refused (and then returns errAnswered).
func (s *Server) recordPing(c echo.Context, job jobs.Job, action string) error {
	answer := func(code int, text string) error {
		_ = c.String(code, text)
		return errAnswered
	}
	var err error
	// A paused job still records its runs (never lose a ping) and answers
	// OK, as Healthchecks does for a check that ignores pings while paused,
	// so a crontab line with curl -f does not start failing; it stays
	// paused, with no status and no alerts, until an operator unpauses it.

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
		if err != nil || n < 0 {
			return answer(http.StatusNotFound, "not found")
		}
		if n > 255 {
			return answer(http.StatusBadRequest, "invalid url format")
		}
		exit = n
		if n != 0 {
			ev = jobs.EventFailure
		}
	}
	rid := c.QueryParam("rid")
	if rid != "" && !uuidPattern.MatchString(rid) {
		return answer(http.StatusBadRequest, "invalid uuid format")
	}
	var body []byte
	if c.Request().Method == http.MethodPost {
		body, err = io.ReadAll(io.LimitReader(c.Request().Body, storage.MaxLog+1))
		if err != nil {
			return answer(http.StatusBadRequest, "could not read the body")
		}
		if len(body) > storage.MaxLog {
			body = body[:storage.MaxLog] // the first 100 kB, as Healthchecks keeps
			_, _ = io.Copy(io.Discard, io.LimitReader(c.Request().Body, pingDrainMax))
		}
	}
	now := s.Now()
	if err := s.Runs.Record(c.Request().Context(), job.ID, rid, ev, exit, now, body); err != nil {
		return answer(http.StatusServiceUnavailable, "storage is not answering; nothing was stored, retry")
	}
	// The status is the scanner's to change, on its next pass: it alone
	// sees the change of status, and mails about it.
	if ev != jobs.EventLog {
		if err := s.JobStore.Touch(c.Request().Context(), job.ID, now); err != nil {
			return answer(http.StatusServiceUnavailable, "storage is not answering; the run was stored, its job's last run not yet")
		}
	}
	return nil
}

// errAnswered stops a handler whose helper has already answered.
var errAnswered = errors.New("web: answered")

func ignoreAnswered(err error) error {
	if errors.Is(err, errAnswered) {
		return nil
	}
	return err
}

// Jobs made by a first ping with ?create=1 start with Healthchecks' own
// defaults for auto-provisioned checks: a run a day, an hour of grace. An
// operator sets the real schedule later; until then the job says so.
const (
	autoSchedule = "every 24h"
	autoGrace    = time.Hour
)

// pingCreate makes the job a slug names on its first ping, then records
// the ping as usual, answering 201 as Healthchecks does.
func (s *Server) pingCreate(c echo.Context, slug, action string) error {
	j := jobs.Job{ID: jobs.NewID(), Slug: slug, Name: slug, Schedule: autoSchedule, TimeZone: "UTC", Grace: autoGrace,
		CreatedAt: s.Now(), Status: jobs.New}
	if err := j.Validate(); err != nil {
		return c.String(http.StatusBadRequest, "invalid slug: use lower-case letters, digits and dashes")
	}
	s.unknownPings.clear()
	if err := s.JobStore.Put(c.Request().Context(), j); err != nil {
		return c.String(http.StatusServiceUnavailable, "storage is not answering; nothing was stored, retry")
	}
	if err := s.recordPing(c, j, action); err != nil {
		return ignoreAnswered(err)
	}
	return c.String(http.StatusCreated, "Created")
}
