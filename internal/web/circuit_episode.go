package web

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/fusebox/fusebox/internal/alerts"
	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/episode"
	"github.com/fusebox/fusebox/internal/errgroups"
	"github.com/fusebox/fusebox/internal/views"
)

// episodeReader assembles an episode's record (episode.Reader).
type episodeReader interface {
	Of(ctx context.Context, ci circuit.Circuit, n int64, now time.Time) (episode.Record, error)
}

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
		m.ErrorsRead = errgroups.MaxRows
	}
	switch _, closed := rec.Closed(); {
	case !closed:
		m.CatchUp = "open"
	case rec.Last() != ci.Episode:
		m.CatchUp = "later"
	default:
		m.CatchUp, m.CatchUpHost = "latest", s.hostPanel(c.Request().Context(), ci)
	}
	if a, ok := rec.Acknowledged(); ok {
		m.Acked, m.AckedAt, m.AckedBy = true, a.At, a.Actor
	}
	if at, ok := rec.Closed(); ok {
		m.Closed, m.ClosedAt, m.ClosedBy = true, at, rec.Steps[len(rec.Steps)-1].Actor
	}
	for _, g := range rec.Errors {
		m.Errors = append(m.Errors, views.ErrorGroupRow{Example: g.Text(), Count: g.Count, First: g.First, Last: g.Last, Sources: strings.Join(g.Sources, ", "), Traces: g.Traces})
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

type episodeJSON struct {
	Circuit      string           `json:"circuit"`
	Episode      int64            `json:"episode"`
	Trip         flipJSON         `json:"trip"`
	Steps        []flipJSON       `json:"steps"`
	Acknowledged *actionJSON      `json:"acknowledged"`
	Closed       bool             `json:"closed"`
	Errors       []errorGroupJSON `json:"errors"`
	ErrorsOther  int              `json:"errors_other"`
	ErrorsGone   bool             `json:"errors_gone"`
	Notices      []noticeJSON     `json:"notices"`
	Markdown     string           `json:"markdown"`
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
	_, rec, err := s.episodeOf(c)
	if err != nil {
		return err
	}
	j := episodeJSON{Circuit: rec.Circuit, Episode: rec.Episode, Trip: toFlipJSON(rec.Trip), Steps: []flipJSON{}, ErrorsOther: rec.ErrorsOther,
		ErrorsGone: rec.ErrorsGone, Errors: []errorGroupJSON{}, Notices: []noticeJSON{}, Markdown: rec.Markdown(s.Now())}
	_, j.Closed = rec.Closed()
	if a, ok := rec.Acknowledged(); ok {
		j.Acknowledged = &actionJSON{At: a.At, Actor: a.Actor}
	}
	for _, f := range rec.Steps {
		j.Steps = append(j.Steps, toFlipJSON(f))
	}
	for _, g := range rec.Errors {
		j.Errors = append(j.Errors, toErrorGroupJSON(g))
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
