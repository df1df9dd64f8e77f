package circuit

// A health probe gates a circuit's automatic trials: after its cooldown
// (AutoResume) or its alert rule's "Resolved", the trigger goes back on
// only after the probe answered well Good times in a row. Downstreams
// probe the same way (internal/downstream).

import (
	"fmt"
	"net/url"
	"slices"
	"time"
)

// Probe is an https health URL and how many good answers in a row start
// an automatic trial.
type Probe struct {
	URL   string
	Good  int           // answers in a row; default 3
	Every time.Duration // between answers; default 10 s
}

// Limits of a probe.
const (
	MaxProbeGood  = 20
	MinProbeEvery = time.Second
	MaxProbeEvery = 10 * time.Minute
	MaxProbeURL   = 2000
	// MaxProbeAnswers are the answers kept and shown.
	MaxProbeAnswers = 10
)

// WithDefaults fills in what the zero value leaves to defaults.
func (p Probe) WithDefaults() Probe {
	if p.URL == "" {
		return Probe{}
	}
	if p.Good == 0 {
		p.Good = 3
	}
	if p.Every == 0 {
		p.Every = 10 * time.Second
	}
	return p
}

// Problems say what is wrong with the probe's URL, Good and Every, by
// field ("" when right). allowLoopback admits http:// to loopback hosts
// (development and tests); anything else must be https.
func (p Probe) Problems(allowLoopback bool) (u, good, every string) {
	if p.URL == "" {
		return "", "", ""
	}
	u = CheckProbeURL(p.URL, allowLoopback)
	if p.Good < 0 || p.Good > MaxProbeGood {
		good = fmt.Sprintf("1 to %d answers in a row", MaxProbeGood)
	}
	if p.Every != 0 && (p.Every < MinProbeEvery || p.Every > MaxProbeEvery) {
		every = "from 1s to 10m"
	}
	return u, good, every
}

// CheckProbeURL says what is wrong with a probe's URL, or "".
func CheckProbeURL(raw string, allowLoopback bool) string {
	if len(raw) > MaxProbeURL {
		return "an absolute https:// URL without a user name"
	}
	u, err := url.Parse(raw)
	switch {
	case err != nil || len(raw) > MaxProbeURL || !u.IsAbs() || u.Host == "" || u.User != nil:
		return "an absolute https:// URL without a user name"
	case u.Scheme == "https":
		return ""
	case u.Scheme == "http" && allowLoopback && loopback(u.Hostname()):
		return ""
	}
	return "must be an https:// URL (http only to loopback, in development)"
}

func loopback(host string) bool {
	return host == "localhost" || host == "127.0.0.1" || host == "::1"
}

// ProbeAnswer is one probe call: good is a 2xx within the time-out; Said
// is its status code or the class of its failure (never the server's
// body).
type ProbeAnswer struct {
	At   time.Time
	Good bool
	Said string
	Took time.Duration
}

// ProbeRecord is what a circuit's probe heard in one episode: its last
// answers, how many good in a row, and whether an alert's "Resolved" is
// waiting for it.
type ProbeRecord struct {
	Episode  int64
	Resolved bool // an alert rule resolved: the trial waits for the probe
	Reason   string
	Answers  []ProbeAnswer
	InARow   int
}

// Heard adds an answer of episode's to r (starting over for a new
// episode).
func (r ProbeRecord) Heard(episode int64, a ProbeAnswer) ProbeRecord {
	if r.Episode != episode {
		r = ProbeRecord{Episode: episode}
	}
	r.Answers = append(slices.Clone(r.Answers), a)
	if len(r.Answers) > MaxProbeAnswers {
		r.Answers = r.Answers[len(r.Answers)-MaxProbeAnswers:]
	}
	if a.Good {
		r.InARow++
	} else {
		r.InARow = 0
	}
	return r
}

// ProbeWaits says what c's probe waits to start, now, given what it heard
// (r): "" when nothing waits. An open circuit with AutoResume waits once
// its cooldown is over; a forced-open one once an alert rule it names
// resolved. Neither while its switch is pending.
func (c Circuit) ProbeWaits(r ProbeRecord, now time.Time) string {
	if c.Probe.URL == "" || c.Pending() {
		return ""
	}
	switch {
	case c.State == Open && c.Policy.AutoResume && !c.TrialAt().IsZero() && !now.Before(c.TrialAt()):
		return fmt.Sprintf("cooldown of %s over", c.Cooldown().Round(time.Second))
	case c.State == ForcedOpen && c.PauseUntil.IsZero() && r.Episode == c.Episode && r.Resolved:
		return r.Reason
	}
	return ""
}

// ProbeDue says whether c's probe is to be called at now: while something
// waits for it, every Probe.Every.
func (c Circuit) ProbeDue(r ProbeRecord, now time.Time) bool {
	if c.ProbeWaits(r, now) == "" {
		return false
	}
	if r.Episode != c.Episode || len(r.Answers) == 0 {
		return true
	}
	return !now.Before(r.Answers[len(r.Answers)-1].At.Add(c.Probe.WithDefaults().Every))
}

// ProbeTries says whether what c's probe heard starts the trial.
func (c Circuit) ProbeTries(r ProbeRecord, now time.Time) bool {
	return c.ProbeWaits(r, now) != "" && r.Episode == c.Episode && r.InARow >= c.Probe.WithDefaults().Good
}
