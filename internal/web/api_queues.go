package web

import (
	"errors"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/queues"
)

type setAsideJSON struct {
	Name     string     `json:"name"`
	Kind     string     `json:"kind"`
	Source   string     `json:"source,omitempty"`
	Function string     `json:"function,omitempty"`
	Count    int        `json:"count"`
	Oldest   *time.Time `json:"oldest"` // null: empty
}

// apiAppQueues lists the work an app set aside: its poison (and blob
// poison) queues, with how many messages each holds and the oldest one's
// age, read from the queues' properties, never by reading them all.
func (s *Server) apiAppQueues(c echo.Context) error {
	ctx := c.Request().Context()
	app, err := s.AppStore.Get(ctx, c.Param("app"))
	if errors.Is(err, circuit.ErrNotFound) {
		return echo.NewHTTPError(http.StatusNotFound, "There is no such app.")
	}
	if err != nil {
		return err
	}
	if s.Queues == nil || app.HostStorage == "" {
		return echo.NewHTTPError(http.StatusNotFound, "Fusebox reads nothing of this app's own storage: register its host storage under Apps, Host insight….")
	}
	found, err := s.Queues.SetAside(ctx, app, nil)
	if errors.Is(err, queues.ErrNoStorage) {
		return echo.NewHTTPError(http.StatusNotFound, "Fusebox reads nothing of this app's own storage: register its host storage under Apps, Host insight….")
	}
	if err != nil {
		// A class of failure, in Fusebox's words (queues.Source).
		return echo.NewHTTPError(http.StatusBadGateway, "The app's queue storage could not be read: "+err.Error()).SetInternal(err)
	}
	out := struct {
		ReadAt time.Time      `json:"read_at"`
		Queues []setAsideJSON `json:"queues"`
	}{ReadAt: s.Now(), Queues: []setAsideJSON{}}
	for _, f := range found {
		q := setAsideJSON{Name: f.Name, Kind: string(f.Kind), Source: f.Source, Function: f.Function, Count: f.Count}
		if !f.Oldest.IsZero() {
			oldest := f.Oldest.UTC()
			q.Oldest = &oldest
		}
		out.Queues = append(out.Queues, q)
	}
	return c.JSON(http.StatusOK, out)
}
