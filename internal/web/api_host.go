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
	// Oldest is when the oldest waiting event arrived, read while the
	// trigger is off; Expires when retention drops it (null: unknown).
	Oldest        *time.Time `json:"oldest_waiting,omitempty"`
	Expires       *time.Time `json:"expires,omitempty"`
	MovedWhileOff bool       `json:"moved_while_off"`
}

type hostJSON struct {
	ReadAt time.Time `json:"read_at"`
	// Own: the circuit names its hub, and these are its checkpoints.
	Own       bool           `json:"own"`
	Positions []positionJSON `json:"positions"`
	Waiting   *int64         `json:"waiting"` // over the counted partitions; null: none counted
	// Expires is when the first waiting event expires, and Lost how many
	// expired before they were read; set while the trigger is off.
	Expires        *time.Time `json:"expires,omitempty"`
	Lost           int64      `json:"lost"`
	RetentionHours int        `json:"event_hub_retention_hours,omitempty"`
	// RetentionFromAzure: the retention is what ARM says of the hub, the
	// circuit setting none.
	RetentionFromAzure bool          `json:"retention_from_azure,omitempty"`
	Concurrency        *int          `json:"learned_concurrency"`
	Problems           []problemJSON `json:"problems"`
}

type problemJSON struct {
	Blob   string `json:"blob"`
	Reason string `json:"reason"`
}

// apiCircuitHost is what the app's own storage and hub say of a circuit's
// function: where each partition resumes and how much waits.
func (s *HostPanels) apiCircuitHost(c echo.Context) error {
	ci, err := s.circuitOf(c)
	if err != nil {
		return err
	}
	snap, app, ok := s.hostSnapshot(c.Request().Context(), ci)
	if !ok {
		return echo.NewHTTPError(http.StatusNotFound, "Fusebox reads nothing of this app's own storage: register its host storage under Apps, Host insight….")
	}
	ps, own, r := s.behind(c.Request().Context(), ci, app, &snap)
	j := hostJSON{ReadAt: snap.ReadAt, Own: own, Positions: []positionJSON{}, Problems: []problemJSON{}, RetentionFromAzure: r.FromAzure}
	keep := r.Keep
	for _, p := range ps {
		pj := positionJSON{Namespace: p.Namespace, Hub: p.Hub, ConsumerGroup: p.ConsumerGroup, Partition: p.Partition, Offset: p.Offset,
			MovedAt: p.Moved, Owner: p.Owner, Expired: p.Expired, MovedWhileOff: p.MovedWhileOff}
		if p.HasSequence {
			pj.Sequence = &p.Sequence
		}
		if p.Counted {
			pj.Waiting = &p.Waiting
		}
		if !p.Oldest.IsZero() {
			pj.Oldest = &p.Oldest
			if e, ok := p.Expires(keep); ok {
				pj.Expires = &e
			}
		}
		j.Positions = append(j.Positions, pj)
	}
	if waiting, counted, _ := hostinsight.Waiting(ps); counted > 0 {
		j.Waiting = &waiting
	}
	if !r.Expires.IsZero() {
		j.Expires = &r.Expires
	}
	j.Lost, j.RetentionHours = hostinsight.Lost(ps), int(keep/time.Hour)
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
