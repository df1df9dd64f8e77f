// Package jobs is Fusebox's domain model of scheduled work: timer-triggered
// functions and background jobs that report their runs, so that slots with
// no run, late runs and failed runs can be found.
//
// Schedules (schedule.go) and gap detection (gaps.go) are pure functions of
// their inputs and a given now; run history, the ping API and the scanner
// that alerts on gaps build on them.
package jobs

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/fusebox/fusebox/internal/spoken"
)

// Status is a job's health as last computed by the scanner.
type Status int

const (
	// New: no run reported yet.
	New Status = iota
	// Up: the last expected slot had a successful run.
	Up
	// Late: the expected run has not come, but the grace period has not passed.
	Late
	// Missing: a slot passed its grace period with no run.
	Missing
	// Failing: the last run reported failure.
	Failing
	// Paused: an operator paused monitoring.
	Paused
)

var statusNames = [...]string{"new", "up", "late", "missing", "failing", "paused"}

func (s Status) String() string {
	if s < 0 || int(s) >= len(statusNames) {
		return fmt.Sprintf("status(%d)", int(s))
	}
	return statusNames[s]
}

// ParseStatus reads the name String gives; unknown names are an error.
func ParseStatus(name string) (Status, error) {
	for i, n := range statusNames {
		if n == name {
			return Status(i), nil
		}
	}
	return 0, fmt.Errorf("jobs: unknown status %q", name)
}

// Healthy reports whether the status needs no one's attention.
func (s Status) Healthy() bool { return s == New || s == Up || s == Paused }

// Job is one piece of scheduled work.
type Job struct {
	ID string // a UUID: names the job on pages, in notices and the API; never pings (but see PingByIDSince)
	// PingToken is the job's ping secret (pingtoken.go), sealed at rest
	// and shown only to operators.
	PingToken string
	// PingByIDSince is when a job made before ping tokens got its token:
	// its id still pings for the grace the operator chose after it. Zero
	// for every job since, and once the token is rotated.
	PingByIDSince time.Time
	Slug          string // optional: /ping/<ping key>/<slug>
	Name          string
	AppID         string // optional: the function app it runs in
	// Team owns a job of no app (one of an app follows its app's team);
	// empty: admins'.
	Team        string
	Function    string        // optional: the timer-triggered function
	Schedule    string        // cron (five fields), NCRONTAB (six) or "every 15m"
	TimeZone    string        // IANA or Windows zone id
	Grace       time.Duration // how late a run may start
	MaxDuration time.Duration // how long a run may take; 0: no limit
	// MinDuration is how short a run may be: one that ends sooner (a job
	// that quits at once) counts as failed. 0: no limit.
	MinDuration time.Duration
	// FailAfter is how many failed runs in a row make the job failing, and
	// RecoverAfter how many good runs in a row make a failing job up
	// again; 0 means 1.
	FailAfter, RecoverAfter int
	Recipients              []string
	Channels                []string // alert channels; none: the app's
	Tags                    []string // lower-case words for filters and badges
	// Misfire says what the scanner does about missed slots of a job that
	// names its function: MisfireOff (nothing), MisfireOnce (run the
	// function once for any number of them) or MisfireEach (once per
	// missed slot, oldest first, at most MaxCatchUp a pass).
	Misfire   string
	Paused    bool
	CreatedAt time.Time // anchors "every" schedules
	Status    Status
	LastRunAt time.Time
	// LastStartAt is when a /start ping last came: a closing ping looks
	// for a run still open only when one came within a day.
	LastStartAt time.Time
	// ExtraRuns counts the runs not stored for coming past MaxRunsPerSlot
	// in one slot's window (SlotBound).
	ExtraRuns int64
	Version   string
}

// Misfire policies.
const (
	MisfireOff  = ""
	MisfireOnce = "once"
	MisfireEach = "each"
)

// MaxCatchUp bounds the catch-up runs of one job in one scanner pass.
const MaxCatchUp = 5

// CatchUp lists the missed slots, oldest first, that job j's misfire
// policy makes up for: with "once" the latest missed slot stands for all,
// with "each" every missed slot (the scanner starts at most MaxCatchUp a
// pass, and a slot made up once is never made up again). Skipped slots
// (in a maintenance window) are not missed.
func CatchUp(j Job, results []SlotResult) []time.Time {
	if (j.Misfire != MisfireOnce && j.Misfire != MisfireEach) || j.AppID == "" || j.Function == "" || j.Paused {
		return nil
	}
	var missed []time.Time
	for _, r := range results {
		if r.Status == SlotMissed {
			missed = append(missed, r.At)
		}
	}
	if len(missed) == 0 {
		return nil
	}
	if j.Misfire == MisfireOnce {
		return missed[len(missed)-1:]
	}
	return missed
}

// HasTag reports whether the job carries tag.
func (j Job) HasTag(tag string) bool {
	for _, t := range j.Tags {
		if t == tag {
			return true
		}
	}
	return false
}

// Badge is what a status badge says of a set of jobs: "down" if any is
// missing or failing, "late" if any is late, "up" otherwise (paused and
// new jobs do not count), and "no jobs" for an empty set.
func Badge(js []Job) string {
	if len(js) == 0 {
		return "no jobs"
	}
	worst := "up"
	for _, j := range js {
		switch j.Status {
		case Missing, Failing:
			return "down"
		case Late:
			worst = "late"
		}
	}
	return worst
}

// Rules says the job's alert rules in words, as the form previews them.
func (j Job) Rules() string {
	var parts []string
	if n := max(j.FailAfter, 1); n > 1 {
		parts = append(parts, fmt.Sprintf("alerts after %d failed runs in a row", n))
	} else {
		parts = append(parts, "alerts on the first failed run")
	}
	if n := max(j.RecoverAfter, 1); n > 1 {
		parts = append(parts, fmt.Sprintf("recovers after %d good runs in a row", n))
	}
	parts = append(parts, fmt.Sprintf("a run starting more than %s late is late", spoken.Duration(j.Grace)))
	if j.MinDuration > 0 {
		parts = append(parts, fmt.Sprintf("a run shorter than %s is an alert", spoken.Duration(j.MinDuration)))
	}
	if j.MaxDuration > 0 {
		parts = append(parts, fmt.Sprintf("a run longer than %s is an alert", spoken.Duration(j.MaxDuration)))
	}
	return strings.Join(parts, "; ")
}

// ExpectedFrom is where a look back from "from" starts for this job: no
// earlier than just after it was created, since a job cannot be expected
// to have run before, or at the very instant, it existed.
func (j Job) ExpectedFrom(from time.Time) time.Time {
	if first := j.CreatedAt.Add(time.Nanosecond); !j.CreatedAt.IsZero() && first.After(from) {
		return first
	}
	return from
}

// MaxEvery bounds an "every" schedule's interval: a year, leap or not.
const MaxEvery = 366 * 24 * time.Hour

// ParseSchedule reads a job's schedule in its zone.
func (j Job) ParseSchedule() (Schedule, error) {
	if len(j.Schedule) > MaxScheduleLen {
		return nil, fmt.Errorf("jobs: a schedule is at most %d characters", MaxScheduleLen)
	}
	if rest, ok := strings.CutPrefix(strings.TrimSpace(j.Schedule), "every "); ok {
		d, err := time.ParseDuration(strings.TrimSpace(rest))
		if err != nil || d < time.Second || d > MaxEvery {
			return nil, fmt.Errorf("jobs: %q: after \"every\" give a duration from 1s to 8784h (a year), such as every 15m", j.Schedule)
		}
		return Every{Interval: d, Anchor: j.CreatedAt}, nil
	}
	if len(j.Schedule) > MaxScheduleLen || len(j.TimeZone) > MaxZoneLen {
		return nil, fmt.Errorf("jobs: a schedule is at most %d characters and a time zone's name %d", MaxScheduleLen, MaxZoneLen)
	}
	key := j.Schedule + "\x00" + j.TimeZone
	if c, ok := parsed.get(key); ok {
		return c, nil
	}
	loc, err := LoadZone(j.TimeZone)
	if err != nil {
		return nil, err
	}
	c, err := ParseCron(j.Schedule, loc)
	if err != nil {
		return nil, err
	}
	parsed.put(key, c)
	return c, nil
}

// parsed keeps schedules parsed: rows are decoded and windows checked on
// every tick, and a Cron, once parsed, is only read.
var parsed = &parsedCrons{m: map[string]*Cron{}}

// maxParsed bounds what parsed keeps; when full it starts over.
const maxParsed = 4096

type parsedCrons struct {
	mu sync.RWMutex
	m  map[string]*Cron
}

func (p *parsedCrons) get(key string) (*Cron, bool) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	c, ok := p.m[key]
	return c, ok
}

func (p *parsedCrons) put(key string, c *Cron) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.m) >= maxParsed {
		clear(p.m)
	}
	p.m[key] = c
}

// RunEvent is what a ping says happened.
type RunEvent int

const (
	EventStart RunEvent = iota
	EventSuccess
	EventFailure
	EventLog
)

// InternalPrefix starts the ids of Fusebox's own loops' jobs. Their runs are
// recorded from inside; the ping API does not take them, so nobody outside
// can raise a false alert or hide a dead loop.
const InternalPrefix = "f0c5b0c5-0000-4000-8000-"

// Internal reports whether the job is one of Fusebox's own loops.
func (j Job) Internal() bool { return strings.HasPrefix(j.ID, InternalPrefix) }

// InternalID reports whether id is that of one of Fusebox's own loops.
func InternalID(id string) bool { return strings.HasPrefix(strings.ToLower(id), InternalPrefix) }

// StoredRun is a run as storage keeps it, with its state, exit status and
// log, for the job page and the API.
type StoredRun struct {
	Run
	State      string
	ExitStatus int
	Log        string
}

// RunCursor says where the next page of a job's runs begins; zero is the
// first page. The API hands it out as an opaque cursor.
type RunCursor struct {
	NextPartitionKey string
	NextRowKey       string
}

// IsZero reports whether there is no further page.
func (c RunCursor) IsZero() bool { return c == RunCursor{} }

// ErrNoWindow is a maintenance window that does not exist.
var ErrNoWindow = errors.New("jobs: no such maintenance window")
