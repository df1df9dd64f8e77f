package web

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/fusebox/fusebox/internal/audit"
	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/queues"
	"github.com/fusebox/fusebox/internal/setaside"
)

// appWithQueues is the app the path names, when Fusebox reads its own
// storage; a 404 that says why otherwise.
func (s *Server) appWithQueues(c echo.Context) (circuit.App, error) {
	app, err := s.AppStore.Get(c.Request().Context(), c.Param("app"))
	if errors.Is(err, circuit.ErrNotFound) {
		return app, echo.NewHTTPError(http.StatusNotFound, "There is no such app.")
	}
	if err != nil {
		return app, err
	}
	if s.Queues == nil || app.HostStorage == "" {
		return app, echo.NewHTTPError(http.StatusNotFound, "Fusebox reads nothing of this app's own storage: register its host storage under Apps, Host insight….")
	}
	return app, nil
}

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
	app, err := s.appWithQueues(c)
	if err != nil {
		return err
	}
	found, err := s.Queues.SetAside(ctx, app, nil)
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

// apiAppQueueRequeue sends set-aside messages back to work: up to count
// (at most queues.MaxRequeue) from a set-aside queue to its source queue,
// or to the queue the body names, each taken, copied, then deleted, so that
// none is lost if Fusebox stops midway (one may be put twice, and the
// answer says how many were). An operator's action, with a reason, audited.
func (s *Server) apiAppQueueRequeue(c echo.Context) error {
	// What the request names is checked before anything is read.
	from := c.Param("queue")
	q, ok := setaside.Classify(from, nil)
	if !ok {
		return echo.NewHTTPError(http.StatusNotFound, "Only a set-aside queue (<queue>-poison, webjobs-blobtrigger-poison) is sent back from here.")
	}
	var body struct {
		To     string `json:"to"`
		Count  int    `json:"count"`
		Reason string `json:"reason"`
	}
	if err := c.Bind(&body); err != nil {
		return echo.NewHTTPError(http.StatusBadRequest, `The body must be JSON: {"reason": "...", "count": 100, "to": "orders"}.`)
	}
	to := body.To
	if to == "" {
		to = q.Source
	}
	switch {
	case strings.TrimSpace(body.Reason) == "" || len(body.Reason) > 500:
		return c.JSON(http.StatusUnprocessableEntity, map[string]string{"error": "Say why (1 to 500 characters): the audit log keeps it."})
	case to == "":
		return c.JSON(http.StatusUnprocessableEntity, map[string]string{"error": "This queue has no source to go back to: name one in \"to\"."})
	case !setaside.ValidQueueName(to) || to == from:
		return c.JSON(http.StatusUnprocessableEntity, map[string]string{"error": "\"to\" must be another queue's name: 3 to 63 lowercase letters, digits and single hyphens."})
	case body.Count < 0:
		return c.JSON(http.StatusUnprocessableEntity, map[string]string{"error": "\"count\" must be positive, or left out for as many as one request moves."})
	}
	n := body.Count
	if n == 0 || n > queues.MaxRequeue {
		n = queues.MaxRequeue
	}
	ctx := c.Request().Context()
	app, err := s.appWithQueues(c)
	if err != nil {
		return err
	}
	moved, rerr := s.Queues.Requeue(ctx, app, from, to, n)
	p, _ := principal(c)
	detail := fmt.Sprintf("%d moved from %s to %s", moved.Moved, from, to)
	if moved.Doubled > 0 {
		detail += fmt.Sprintf(", %d put on %s but still in %s (they may be processed twice)", moved.Doubled, to, from)
	}
	if rerr != nil {
		detail += "; stopped: " + rerr.Error()
	}
	if err := s.Audit.Append(context.WithoutCancel(ctx), audit.Entry{At: s.Now(), Actor: p.Name, Action: "requeued", Target: app.ID + "/" + from, Detail: detail + ". Reason: " + body.Reason}); err != nil {
		return err
	}
	status := http.StatusOK
	if rerr != nil {
		status = http.StatusBadGateway
	}
	return c.JSON(status, map[string]any{"moved": moved.Moved, "doubled": moved.Doubled, "to": to, "error": errText(rerr)})
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
