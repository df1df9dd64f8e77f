package web

import (
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/fusebox/fusebox/internal/jobs"
)

// The ping API answers like Healthchecks.io, so the curl lines people
// already have in crontabs and scripts work by changing the host:
//
//	/ping/<ping token>[/start|/fail|/log|/<exit status>][?rid=<id>]
//	/ping/<ping key>/<slug>[/start|/fail|/log|/<exit status>]
//
// A job's ping token is its own secret (jobs.NewPingToken), never its id,
// which every viewer and chat channel sees; a job made before tokens
// answers to /ping/<uuid> for FUSEBOX_PING_ID_GRACE after migration.
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

func (s *Intake) ping(c echo.Context) error {
	c.Response().Header().Set("Ping-Body-Limit", strconv.Itoa(jobs.MaxLog))
	a, b, cc := c.Param("a"), c.Param("b"), c.Param("c")
	var job jobs.Job
	var err error
	action := ""
	byID := false
	switch {
	case cc == "" && len(a) == jobs.PingTokenLength:
		id, ok := jobs.PingTokenJob(a)
		if !ok || jobs.InternalID(id) || s.unknownPings.has(id) {
			return c.String(http.StatusNotFound, "not found") // no storage read
		}
		if known, match := s.pingSecrets.verdict(id, a, time.Now()); known && !match {
			return c.String(http.StatusNotFound, "not found") // a real job's id, a wrong secret: no storage read
		}
		job, err = s.Jobs.Get(c.Request().Context(), id)
		if err == nil {
			s.pingSecrets.remember(id, job.PingToken, time.Now())
		}
		if err == nil && !job.PingsWith(a) {
			return c.String(http.StatusNotFound, "not found")
		}
		action = b
	case uuidPattern.MatchString(a) && cc == "":
		if jobs.InternalID(a) || s.unknownPings.has(a) {
			return c.String(http.StatusNotFound, "not found") // no storage read
		}
		job, err = s.Jobs.Get(c.Request().Context(), a)
		action, byID = b, true
	case s.Config.PingKey != "" && b != "" && subtle.ConstantTimeCompare([]byte(a), []byte(s.Config.PingKey.Reveal())) == 1:
		job, err = s.Jobs.BySlug(c.Request().Context(), b)
		action = cc
		if errors.Is(err, jobs.ErrNoJob) && c.QueryParam("create") == "1" {
			return s.pingCreate(c, b, action)
		}
	default:
		return c.String(http.StatusNotFound, "not found")
	}
	if errors.Is(err, jobs.ErrNoJob) {
		if id, ok := jobs.PingTokenJob(a); ok && cc == "" {
			s.unknownPings.add(id)
		} else if uuidPattern.MatchString(a) { // slug pings need the ping key: no cache for them
			s.unknownPings.add(a)
		}
		return c.String(http.StatusNotFound, "not found")
	}
	if byID && err == nil && !job.PingsByID(s.Now(), s.Config.PingIDGrace) {
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

// recordPing binds one ping of job and has jobs.Recorder record it; it
// answers the request itself when the ping is refused (and then returns
// errAnswered).
func (s *Intake) recordPing(c echo.Context, job jobs.Job, action string) error {
	answer := func(code int, text string) error {
		_ = c.String(code, text)
		return errAnswered
	}
	ev, exit, err := jobs.ParseAction(action)
	switch {
	case errors.Is(err, jobs.ErrExitStatus):
		return answer(http.StatusBadRequest, "invalid url format")
	case err != nil:
		return answer(http.StatusNotFound, "not found")
	}
	rid := c.QueryParam("rid")
	if rid != "" && !uuidPattern.MatchString(rid) {
		return answer(http.StatusBadRequest, "invalid uuid format")
	}
	var body []byte
	if c.Request().Method == http.MethodPost {
		body, err = io.ReadAll(io.LimitReader(c.Request().Body, jobs.MaxLog+1))
		if err != nil {
			return answer(http.StatusBadRequest, "could not read the body")
		}
		if len(body) > jobs.MaxLog {
			// The ping still counts; the rest is drained so curl, still
			// sending, gets its answer on a healthy connection.
			_, _ = io.Copy(io.Discard, io.LimitReader(c.Request().Body, pingDrainMax))
		}
	}
	err = s.Pings.Record(c.Request().Context(), job, jobs.Ping{Event: ev, Exit: exit, RunID: rid, At: s.Now(), Body: body})
	switch {
	case errors.Is(err, jobs.ErrTooManyRuns):
		// Healthchecks answers every valid ping of a known check OK, and
		// its crontab idioms (curl -fsS --retry 5) retry anything else
		// and then fail the script: the ping was taken (counted on the
		// job), so it is OK, and a header says it was not stored.
		c.Response().Header().Set(HeaderNotStored, fmt.Sprintf("this job already has %d runs in this slot's window: counted on the job, not stored", jobs.MaxRunsPerSlot))
		return answer(http.StatusOK, "OK")
	case errors.Is(err, jobs.ErrLastRunNotSaved):
		return answer(http.StatusServiceUnavailable, "storage is not answering; the run was stored, its job's last run not yet")
	case err != nil:
		return answer(http.StatusServiceUnavailable, "storage is not answering; nothing was stored, retry")
	}
	return nil
}

// HeaderNotStored is set on a ping's OK when the ping was counted on its
// job but not stored as a run (jobs.MaxRunsPerSlot runs in its slot's
// window already).
const HeaderNotStored = "X-Fusebox-Not-Stored"

// errAnswered stops a handler whose helper has already answered.
var errAnswered = errors.New("web: answered")

func ignoreAnswered(err error) error {
	if errors.Is(err, errAnswered) {
		return nil
	}
	return err
}

// pingCreatesPerHour bounds the jobs ?create=1 makes, per instance: the
// ping key is shared by every cron host that pings by slug, so one leaked
// copy must not fill the job list (each job is a row, a page entry and a
// check every tick). A fleet being set up makes its jobs within the hour's
// burst; past it the answer says how to go on.
const pingCreatesPerHour = 50

// pingCreate makes the job a slug names on its first ping (with
// Healthchecks' defaults for auto-provisioned checks: jobs.Provisioned),
// then records the ping as usual, answering 201 as Healthchecks does.
func (s *Intake) pingCreate(c echo.Context, slug, action string) error {
	j := jobs.Provisioned(slug, s.Now())
	if err := j.Validate(); err != nil {
		return c.String(http.StatusBadRequest, "invalid slug: use lower-case letters, digits and dashes")
	}
	if !s.pingCreates.Allow() {
		return tooMany(c, fmt.Sprintf("the ping key created %d jobs in the last hour: create this one from the Jobs page, or ping again later", pingCreatesPerHour))
	}
	s.unknownPings.clear()
	if err := s.Catalog.Create(c.Request().Context(), j); err != nil {
		return c.String(http.StatusServiceUnavailable, "storage is not answering; nothing was stored, retry")
	}
	if err := s.recordPing(c, j, action); err != nil {
		return ignoreAnswered(err)
	}
	return c.String(http.StatusCreated, "Created")
}
