package web

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/fusebox/fusebox/internal/alerts"
	"github.com/fusebox/fusebox/internal/apiwire"
	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/episode"
	"github.com/fusebox/fusebox/internal/errortexts"
	"github.com/fusebox/fusebox/internal/hostinsight"
	"github.com/fusebox/fusebox/internal/spoken"
	"github.com/fusebox/fusebox/internal/views"
)

// episodeOf reads the episode the path names of the circuit it names.
func (s *CircuitPages) episodeOf(c echo.Context) (circuit.Circuit, episode.Record, error) {
	n, err := strconv.ParseInt(c.Param("episode"), 10, 64)
	if err != nil || n < 1 {
		return circuit.Circuit{}, episode.Record{}, echo.NewHTTPError(http.StatusBadRequest, "An episode is a number from 1.")
	}
	ci, err := s.circuitOf(c)
	if err != nil {
		return ci, episode.Record{}, err
	}
	rec, err := s.Episodes.Of(c.Request().Context(), ci, n, s.Now())
	if errors.Is(err, episode.ErrNoTrip) {
		return ci, rec, echo.NewHTTPError(http.StatusNotFound, "That episode of this circuit did not start with a trip, or its flip is no longer kept.")
	}
	return ci, rec, err
}

// circuitEpisode is one episode's page: the trip, what failed, the
// notices and what became of them, the timeline and its Markdown.
func (s *CircuitPages) circuitEpisode(c echo.Context) error {
	ci, rec, err := s.episodeOf(c)
	if err != nil {
		return err
	}
	now := s.Now()
	m := views.Episode{Page: s.page(c, ci.Function+", episode "+strconv.FormatInt(rec.Episode, 10), "circuits"),
		Circuit: rec.Circuit, Base: circuitHref(ci), Number: rec.Episode,
		Tripped: rec.Trip.At, TripBy: rec.Trip.Actor, Counted: episode.Counted(rec.Trip), Reason: rec.Trip.Reason,
		ErrorsOther: rec.ErrorsOther, ErrorsGone: rec.ErrorsGone, Markdown: rec.Markdown(now),
		Lasted: episode.AfterTrip(rec.Trip.At, rec.Ended(now))}
	if rec.ErrorsPartial {
		m.ErrorsRead = errortexts.MaxRows
	}
	switch _, closed := rec.Closed(); {
	case !closed:
		m.CatchUp = "open"
	case rec.Last() != ci.Episode:
		m.CatchUp = "later"
	default:
		m.CatchUp, m.CatchUpHost = "latest", s.hosts.hostPanel(c.Request().Context(), ci)
	}
	s.drain(c.Request().Context(), ci, rec, now, &m)
	if skipped, replayed, lost, ok := rec.Events(); ok {
		m.Events, m.EventsUnsafe = episode.EventsText(skipped, replayed, lost, rec.Replay), lost > 0
		for _, st := range rec.Replay.Steps {
			m.EventsRows = append(m.EventsRows, views.ReplayStepRow{Partition: st.Partition, Replayed: st.Replayed, Lost: st.Lost, Note: st.Reason})
		}
	}
	if a, ok := rec.Acknowledged(); ok {
		m.Acked, m.AckedAt, m.AckedBy = true, a.At, a.Actor
	}
	if f, ok := rec.Closing(); ok {
		m.Closed, m.ClosedAt, m.ClosedBy, m.Ramped = true, f.At, f.Actor, f.To == circuit.Throttled
	}
	app := s.appOfTraces(c.Request().Context(), ci.AppID, rec.Errors)
	for _, g := range rec.Errors {
		m.Errors = append(m.Errors, errorGroupRow(g, app))
	}
	for _, n := range rec.Notices {
		m.Notices = append(m.Notices, views.NoticeRow{Kind: n.Kind, To: episode.Destination(n.To), State: episode.NoticeState(n), Tone: noticeTone(n.State),
			At: noticeAt(n), Attempts: n.Attempts})
	}
	for _, e := range rec.Timeline() {
		m.Timeline = append(m.Timeline, views.TimelineRow{At: e.At, What: e.What, Who: e.Who})
	}
	return render(c, http.StatusOK, views.EpisodePage(m))
}

// drainBars bounds the bars of an episode's waiting counts.
const drainBars = 120

// drain fills in how many events waited behind the checkpoints over the
// episode and the hour after it closed, as the waiting sampler kept them.
func (s *CircuitPages) drain(ctx context.Context, ci circuit.Circuit, rec episode.Record, now time.Time, m *views.Episode) {
	if s.HostSamples == nil || ci.Consumes().Hub == "" {
		return
	}
	to := now
	closedAt, closed := rec.Closed()
	if closed && closedAt.Add(time.Hour).Before(now) {
		to = closedAt.Add(time.Hour)
	}
	samples, err := s.HostSamples.Waiting(ctx, ci.AppID, ci.Function, rec.Trip.At, to)
	if err != nil || len(samples) == 0 {
		m.DrainWords = "No waiting counts were kept for this episode: Fusebox samples them each minute while the trigger is off and for an hour after, when it reads the app's storage and hub."
		return
	}
	first, last := samples[0].At, samples[len(samples)-1].At
	span := max(last.Sub(first)/drainBars+time.Minute, time.Minute)
	m.Drain = make([]int, int(last.Sub(first)/span)+1)
	for _, x := range samples {
		i := int(x.At.Sub(first) / span)
		m.Drain[i] = max(m.Drain[i], int(min(x.Waiting, 1<<31-1)))
	}
	m.DrainFrom, m.DrainTo = first.UTC().Format("15:04"), last.UTC().Format("15:04")
	peak := slices.MaxFunc(samples, func(a, b hostinsight.WaitingSample) int { return cmp.Compare(a.Waiting, b.Waiting) })
	if peak.Waiting == 0 {
		m.DrainWords = fmt.Sprintf("No event waited at any of the %d counts kept, from %s to %s.", len(samples), first.UTC().Format("15:04"), last.UTC().Format("15:04 MST"))
		return
	}
	words := fmt.Sprintf("At most %d events waited (%s).", peak.Waiting, peak.At.UTC().Format("15:04 MST"))
	switch at, drained := hostinsight.Drained(samples, closedAt); {
	case !closed:
	case drained && at.Waiting == 0:
		words += fmt.Sprintf(" After the resume at %s, none were left by %s, %s.", closedAt.UTC().Format("15:04"), at.At.UTC().Format("15:04 MST"), later(at.At.Sub(closedAt)))
	case drained:
		words += fmt.Sprintf(" After the resume at %s, it had caught up by %s, %s: %d waiting, as new events arrive.", closedAt.UTC().Format("15:04"), at.At.UTC().Format("15:04 MST"), later(at.At.Sub(closedAt)), at.Waiting)
	case samples[len(samples)-1].At.Before(closedAt):
		words += fmt.Sprintf(" It was resumed at %s; no count has been kept since.", closedAt.UTC().Format("15:04 MST"))
	default:
		end := samples[len(samples)-1]
		words += fmt.Sprintf(" %d still waited at %s, the last count kept, %s after the resume.", end.Waiting, end.At.UTC().Format("15:04 MST"), spoken.Duration(end.At.Sub(closedAt).Round(time.Minute)))
	}
	m.DrainWords = words
}

// later says how long after the resume, to the minute: counts are taken
// each minute, so less than one is "within a minute".
func later(d time.Duration) string {
	if d < time.Minute {
		return "within a minute"
	}
	return spoken.Duration(d.Round(time.Minute)) + " later"
}

type episodeJSON struct {
	Circuit      string               `json:"circuit"`
	Episode      int64                `json:"episode"`
	Trip         apiwire.Flip         `json:"trip"`
	Steps        []apiwire.Flip       `json:"steps"`
	Acknowledged *actionJSON          `json:"acknowledged"`
	Closed       bool                 `json:"closed"`
	Errors       []apiwire.ErrorGroup `json:"errors"`
	ErrorsOther  int                  `json:"errors_other"`
	ErrorsGone   bool                 `json:"errors_gone"`
	Notices      []noticeJSON         `json:"notices"`
	Markdown     string               `json:"markdown"`
}

type actionJSON struct {
	At    time.Time `json:"at"`
	Actor string    `json:"actor"`
}

type noticeJSON struct {
	Kind      string    `json:"kind"`
	To        string    `json:"to"`
	State     string    `json:"state"`
	Attempts  int       `json:"attempts"`
	CreatedAt time.Time `json:"created_at"`
	SentAt    time.Time `json:"sent_at,omitzero"`
}

// apiCircuitEpisode serves an episode's record, its Markdown included.
func (s *CircuitPages) apiCircuitEpisode(c echo.Context) error {
	ci, rec, err := s.episodeOf(c)
	if err != nil {
		return err
	}
	j := episodeJSON{Circuit: rec.Circuit, Episode: rec.Episode, Trip: toFlipJSON(rec.Trip), Steps: []apiwire.Flip{}, ErrorsOther: rec.ErrorsOther,
		ErrorsGone: rec.ErrorsGone, Errors: []apiwire.ErrorGroup{}, Notices: []noticeJSON{}, Markdown: rec.Markdown(s.Now())}
	_, j.Closed = rec.Closed()
	if a, ok := rec.Acknowledged(); ok {
		j.Acknowledged = &actionJSON{At: a.At, Actor: a.Actor}
	}
	for _, f := range rec.Steps {
		j.Steps = append(j.Steps, toFlipJSON(f))
	}
	app := s.appOfTraces(c.Request().Context(), ci.AppID, rec.Errors)
	for _, g := range rec.Errors {
		j.Errors = append(j.Errors, toErrorGroupJSON(g, app))
	}
	for _, n := range rec.Notices {
		j.Notices = append(j.Notices, noticeJSON{Kind: n.Kind, To: n.To, State: n.State, Attempts: n.Attempts, CreatedAt: n.CreatedAt, SentAt: n.SentAt})
	}
	return c.JSON(http.StatusOK, j)
}

func noticeAt(m alerts.Message) time.Time {
	if !m.SentAt.IsZero() {
		return m.SentAt
	}
	return m.CreatedAt
}

func noticeTone(state string) string {
	switch state {
	case alerts.Sent:
		return "ok"
	case alerts.Failed:
		return "bad"
	}
	return "warn"
}
