package jobs

import (
	"crypto/rand"
	"fmt"
	"math/bits"
	"net/mail"
	"regexp"
	"strings"
	"time"

	"github.com/fusebox/fusebox/internal/spoken"
	"github.com/fusebox/fusebox/internal/trigger"
	"github.com/fusebox/fusebox/internal/validation"
)

// FieldError and ValidationError are validation's, so jobs answer as
// circuits do.
type (
	FieldError      = validation.FieldError
	ValidationError = validation.Error
)

var (
	slugPattern = regexp.MustCompile(`^[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?$`)
	tagPattern  = regexp.MustCompile(`^[a-z0-9](?:[a-z0-9-]{0,28}[a-z0-9])?$`)
)

// Validate checks a job's settings, one message per field.
func (j Job) Validate() error {
	var v ValidationError
	add := v.Add
	if n := strings.TrimSpace(j.Name); n == "" || len(n) > 100 {
		add("name", "give the job a name of 1 to 100 characters")
	}
	if j.Slug != "" && !slugPattern.MatchString(j.Slug) {
		add("slug", "must be lower-case letters, digits and dashes, such as nightly-sales")
	}
	if _, err := LoadZone(j.TimeZone); err != nil {
		add("time_zone", "%v", strings.TrimPrefix(err.Error(), "jobs: "))
	} else if s, err := j.ParseSchedule(); err != nil {
		add("schedule", "%v", strings.TrimPrefix(err.Error(), "jobs: "))
	} else if msg := tooOften(s); msg != "" && !InternalID(j.ID) {
		add("schedule", "%s", msg)
	}
	switch {
	case j.Grace < 0:
		add("grace", "cannot be negative")
	case j.Grace > 7*24*time.Hour:
		add("grace", "must be at most 168h")
	}
	if j.MaxDuration < 0 {
		add("max_duration", "cannot be negative (0 means no limit)")
	}
	switch {
	case j.MinDuration < 0:
		add("min_duration", "cannot be negative (0 means no limit)")
	case j.MinDuration > 0 && j.MaxDuration > 0 && j.MinDuration >= j.MaxDuration:
		add("min_duration", "must be shorter than the maximum duration (%s)", spoken.Duration(j.MaxDuration))
	}
	switch j.Misfire {
	case MisfireOff, MisfireOnce, MisfireEach:
	default:
		add("misfire", "must be off, once or each")
	}
	if j.Misfire != MisfireOff && (j.AppID == "" || j.Function == "") {
		add("misfire", "catching up runs the job's function: name its app and function")
	}
	if len(j.Tags) > 10 {
		add("tags", "at most 10 tags")
	}
	for _, t := range j.Tags {
		if !tagPattern.MatchString(t) {
			add("tags", "%q is not a tag: 1 to 30 lower-case letters, digits or dashes", t)
			break
		}
	}
	if j.FailAfter < 0 || j.FailAfter > 100 {
		add("fail_after", "must be 1 to 100 failed runs in a row")
	}
	if j.RecoverAfter < 0 || j.RecoverAfter > 100 {
		add("recover_after", "must be 1 to 100 good runs in a row")
	}
	if j.Function != "" && !trigger.ValidName(j.Function) {
		add("function", "must be a function name: "+trigger.NameRule)
	}
	if j.Function != "" && j.AppID == "" {
		add("app", "choose the function app the function runs in")
	}
	for _, r := range j.Recipients {
		if a, err := mail.ParseAddress(r); err != nil || a.Address != r {
			add("recipients", "%q is not an e-mail address", r)
			break
		}
	}
	if len(v) > 0 {
		return v
	}
	return nil
}

// NextRuns previews the next n slots after now.
func (j Job) NextRuns(now time.Time, n int) ([]time.Time, error) {
	s, err := j.ParseSchedule()
	if err != nil {
		return nil, err
	}
	var out []time.Time
	for from := now.Add(time.Second); len(out) < n; {
		at, ok := s.Next(from)
		if !ok {
			break
		}
		out = append(out, at)
		from = at.Add(time.Second)
	}
	return out, nil
}

// NewID makes a job id: a random UUID, as in ping URLs.
func NewID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

// tooOften says why a schedule a person gives fires too often to keep,
// or "": Fusebox's slots are kept per run, so a job runs at most once a
// minute. Seconds stay, as the Functions host's NCRONTAB has them (0 30
// 9 * * * is 09:30:00); Fusebox's own loops (InternalID) may run more
// often.
func tooOften(s Schedule) string {
	switch s := s.(type) {
	case Every:
		if s.Interval < time.Minute {
			return "a job runs at most once a minute: give every 1m or longer"
		}
	case *Cron:
		if bits.OnesCount64(s.sec) > 1 {
			return "a job runs at most once a minute: give one value in the seconds field, such as 0"
		}
	}
	return ""
}
