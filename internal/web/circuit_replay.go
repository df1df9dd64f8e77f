package web

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/egress"
	"github.com/fusebox/fusebox/internal/replay"
	"github.com/fusebox/fusebox/internal/views"
)

// The resume from before the first failure: offered beside "resume where
// it stopped" wherever a circuit of an Event Hubs function is resumed.

// replayPanel is what a resume from before the first failure would do
// for ci; nil where it does not apply (no hub named, no host storage, no
// replay part).
func (s *SwitchPages) replayPanel(ctx context.Context, ci circuit.Circuit) *views.Replay {
	if s.Replay == nil || ci.Consumes().Hub == "" {
		return nil
	}
	app, err := s.Apps.Get(ctx, ci.AppID)
	if err != nil || app.HostStorage == "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	m := &views.Replay{CheckpointFirst: circuit.OffersFirst(ci, app) == circuit.ResumeFromCheckpoint}
	if err := replay.Ready(ci, app); err != nil {
		m.Why = replay.Words(err)
	}
	rec, err := s.Replay.Of(ctx, ci, app)
	if err != nil {
		m.Why = "Fusebox could not read where the partitions stood: " + replay.Words(err)
		return m
	}
	if rec.Problem != "" {
		m.Why = rec.Problem
	}
	m.FirstFailure, m.Open = rec.FirstFailure, rec.Open()
	m.Replay, m.Again, m.Lost, m.Unknown = rec.Totals()
	for _, p := range rec.Partitions {
		m.Rows = append(m.Rows, views.ReplayRow{Partition: p.Partition, Known: p.Known, What: p.Describe(), Events: p.Events, Again: p.Again, Expired: p.Expired})
	}
	m.Available = m.Why == "" && m.Replay > 0
	return m
}

// resumeAs resumes ci by hand or by link, from where it stopped or, when
// the form or body asks, from before its first failure; done says what
// was replayed.
func (s *SwitchPages) resumeAs(ctx context.Context, from string, ci circuit.Circuit, actor, reason string, link *circuit.LinkClaim) (next circuit.Circuit, done string, err error) {
	if from != circuit.ResumeFromFirstFailure {
		if link != nil {
			next, err = s.Breakers.ResumeByLink(ctx, *link, actor, reason)
		} else {
			next, err = s.Breakers.Flip(ctx, ci.AppID, ci.Function, actor, reason, circuit.Resuming)
		}
		return next, "", err
	}
	if s.Replay == nil {
		return ci, "", echo.NewHTTPError(http.StatusConflict, "This Fusebox does not replay Event Hubs checkpoints.")
	}
	next, rec, err := s.Replay.Resume(ctx, ci.AppID, ci.Function, actor, reason, link)
	var nr replay.ErrNotReady
	if errors.As(err, &nr) {
		return ci, "", echo.NewHTTPError(http.StatusConflict, "Cannot resume from before the first failure: "+nr.Why+".")
	}
	if err != nil && !circuit.IsLinkRefusal(err) && !errors.Is(err, circuit.ErrNotFound) && !isConflict(err) {
		// A storage failure midway: the plan is kept, pressing again
		// finishes it. The trigger is still off.
		return ci, "", echo.NewHTTPError(http.StatusServiceUnavailable, "Moving the checkpoints back stopped midway ("+replay.Words(err)+"). The trigger is still off; resume again to finish: what was written is kept.").
			SetInternal(errors.New("replay stopped: " + egress.Class(err))) // for the log: a class, never a server's text
	}
	return next, rec.Summary(), err
}

func isConflict(err error) bool {
	for _, e := range []error{circuit.ErrStillOpen, circuit.ErrSwitching, circuit.ErrNotOpen, circuit.ErrConflictRetries} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// apiCircuitReplay answers what a resume from before the first failure
// would do, or did, for the circuit's episode.
func (s *SwitchPages) apiCircuitReplay(c echo.Context) error {
	ci, err := s.circuitOf(c)
	if err != nil {
		return err
	}
	m := s.replayPanel(c.Request().Context(), ci)
	if m == nil {
		return echo.NewHTTPError(http.StatusNotFound, "The circuit names no Event Hub of an app whose host storage Fusebox reads.")
	}
	type row struct {
		Partition string `json:"partition"`
		Known     bool   `json:"known"`
		Replays   string `json:"replays"`
		Events    int64  `json:"events"`
		Again     int64  `json:"again"`
		Expired   int64  `json:"expired"`
	}
	out := struct {
		Available    bool     `json:"available"`
		Why          string   `json:"why,omitempty"`
		FirstFailure string   `json:"firstFailure,omitempty"`
		Replay       int64    `json:"replay"`
		Again        int64    `json:"again"`
		Lost         int64    `json:"lost"`
		Unknown      []string `json:"unknown"`
		Unfinished   bool     `json:"unfinished"`
		Partitions   []row    `json:"partitions"`
	}{Available: m.Available, Why: m.Why, Replay: m.Replay, Again: m.Again, Lost: m.Lost, Unknown: nonNil(m.Unknown), Unfinished: m.Open, Partitions: []row{}}
	if !m.FirstFailure.IsZero() {
		out.FirstFailure = m.FirstFailure.UTC().Format(time.RFC3339)
	}
	for _, r := range m.Rows {
		out.Partitions = append(out.Partitions, row{r.Partition, r.Known, r.What, r.Events, r.Again, r.Expired})
	}
	return c.JSON(http.StatusOK, out)
}
