package web

import (
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/fusebox/fusebox/internal/hostinsight"
)

type positionJSON struct {
	Namespace     string    `json:"namespace"`
	Hub           string    `json:"hub"`
	ConsumerGroup string    `json:"consumer_group"`
	Partition     string    `json:"partition"`
	Sequence      *int64    `json:"sequence"` // null: never checkpointed
	Offset        string    `json:"offset,omitempty"`
	MovedAt       time.Time `json:"moved_at"`
	Owner         string    `json:"owner,omitempty"`
	Waiting       *int64    `json:"waiting"` // null: unknown
	Expired       int64     `json:"expired"`
	MovedWhileOff bool      `json:"moved_while_off"`
}

type hostJSON struct {
	ReadAt time.Time `json:"read_at"`
	// Own: the circuit names its hub, and these are its checkpoints.
	Own         bool           `json:"own"`
	Positions   []positionJSON `json:"positions"`
	Waiting     *int64         `json:"waiting"` // over the counted partitions; null: none counted
	Concurrency *int           `json:"learned_concurrency"`
	Problems    []problemJSON  `json:"problems"`
}

type problemJSON struct {
	Blob   string `json:"blob"`
	Reason string `json:"reason"`
}

// apiCircuitHost is what the app's own storage and hub say of a circuit's
// function: where each partition resumes and how much waits.
func (s *CircuitPages) apiCircuitHost(c echo.Context) error {
	ci, err := s.circuitOf(c)
	if err != nil {
		return err
	}
	snap, ok := s.hostSnapshot(c.Request().Context(), ci)
	if !ok {
		return echo.NewHTTPError(http.StatusNotFound, "Fusebox reads nothing of this app's own storage: register its host storage under Apps, Host insight….")
	}
	ps, own := hostinsight.Positions(snap, ci.Consumes(), offSince(ci))
	j := hostJSON{ReadAt: snap.ReadAt, Own: own, Positions: []positionJSON{}, Problems: []problemJSON{}}
	for _, p := range ps {
		pj := positionJSON{Namespace: p.Namespace, Hub: p.Hub, ConsumerGroup: p.ConsumerGroup, Partition: p.Partition, Offset: p.Offset,
			MovedAt: p.Moved, Owner: p.Owner, Expired: p.Expired, MovedWhileOff: p.MovedWhileOff}
		if p.HasSequence {
			pj.Sequence = &p.Sequence
		}
		if p.Counted {
			pj.Waiting = &p.Waiting
		}
		j.Positions = append(j.Positions, pj)
	}
	if waiting, counted, _ := hostinsight.Waiting(ps); counted > 0 {
		j.Waiting = &waiting
	}
	if snap.Concurrency != nil {
		if n, ok := snap.Concurrency.Functions[ci.Function]; ok {
			j.Concurrency = &n
		}
	}
	for _, p := range snap.Problems {
		j.Problems = append(j.Problems, problemJSON{p.Blob, p.Reason})
	}
	return c.JSON(http.StatusOK, j)
}
