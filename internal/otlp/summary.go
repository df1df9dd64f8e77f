package otlp

import (
	"slices"
	"time"
)

// Quiet is how long an app that sent telemetry may send none before its
// export is called silent.
const Quiet = 10 * time.Minute

// Expect is how far back an arrival makes an app one that sends.
const Expect = 24 * time.Hour

// Summary is what an app's export looks like, from every instance's rows.
type Summary struct {
	// Hour adds up the last hour per signal.
	Hour map[Source]Arrival
	Last time.Time // the last export of any signal, zero if none in Expect
	// Silent says the app sent telemetry within Expect but none for Quiet.
	Silent bool
	// ForeignNames are service.name values other than the app's site: the
	// key decides the app, so they are shown, not trusted.
	ForeignNames []string
}

// Summarize adds up an app's arrival rows (those since now-Expect).
func Summarize(rows []Arrival, site string, now time.Time) Summary {
	s := Summary{Hour: map[Source]Arrival{}}
	hour := now.Add(-time.Hour)
	for _, r := range rows {
		if r.Last.After(s.Last) {
			s.Last = r.Last
		}
		if r.Last.Before(hour) {
			continue
		}
		sum := s.Hour[r.Source]
		sum.Source = r.Source
		sum.Add(r)
		s.Hour[r.Source] = sum
		for _, n := range r.ServiceNames {
			if n != site && !slices.Contains(s.ForeignNames, n) {
				s.ForeignNames = append(s.ForeignNames, n)
			}
		}
	}
	s.Silent = !s.Last.IsZero() && now.Sub(s.Last) > Quiet
	slices.Sort(s.ForeignNames)
	return s
}

// Any says whether anything arrived within Expect.
func (s Summary) Any() bool { return !s.Last.IsZero() }
