package web

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/setaside"
	"github.com/fusebox/fusebox/internal/setaside/queues"
	"github.com/fusebox/fusebox/internal/setaside/sendback"
)

// setAsideOf is the app the path names and whose work each of its queues
// holds, when Fusebox reads the app's own storage; a 404 that says why
// otherwise. Only Fusebox's own tables are read.
func (s *AppPages) setAsideOf(c echo.Context) (circuit.App, setaside.Owners, error) {
	ctx := c.Request().Context()
	app, err := s.Apps.Get(ctx, c.Param("app"))
	if errors.Is(err, circuit.ErrNotFound) {
		return app, setaside.Owners{}, echo.NewHTTPError(http.StatusNotFound, "There is no such app.")
	}
	if err != nil {
		return app, setaside.Owners{}, err
	}
	if s.Queues == nil || app.HostStorage == "" {
		return app, setaside.Owners{}, echo.NewHTTPError(http.StatusNotFound, "Fusebox reads nothing of this app's own storage: register its host storage under Apps, Host insight….")
	}
	list := s.Circuits.List // an action reads the owners afresh
	if c.Request().Method == http.MethodGet {
		list = func(ctx context.Context) ([]circuit.Circuit, error) { return s.Circuits.Recent(ctx, listFreshness) }
	}
	cs, err := list(ctx)
	if err != nil {
		return app, setaside.Owners{}, err
	}
	return app, circuit.SetAsideOwners(app.ID, cs), nil
}

// setAsideQueue is the set-aside queue the path names, checked against
// the app's owners before anything of the app's storage is read.
func (s *AppPages) setAsideQueue(c echo.Context) (circuit.App, setaside.Queue, error) {
	name := c.Param("queue")
	if !setaside.ValidQueueName(name) {
		return circuit.App{}, setaside.Queue{}, echo.NewHTTPError(http.StatusNotFound, "That is not a queue name.")
	}
	app, owners, err := s.setAsideOf(c)
	if err != nil {
		return app, setaside.Queue{}, err
	}
	q, ok := owners.Classify(name)
	if !ok {
		return app, q, echo.NewHTTPError(http.StatusNotFound, "Only a set-aside queue (<queue>-poison, webjobs-blobtrigger-poison, or a circuit's parking queue) is shown and sent back from here.")
	}
	return app, q, nil
}

type setAsideJSON struct {
	Name       string     `json:"name"`
	Kind       string     `json:"kind"`
	Source     string     `json:"source,omitempty"`
	Function   string     `json:"function,omitempty"`
	Count      int        `json:"count"`
	Oldest     *time.Time `json:"oldest"`         // null: empty
	Expires    *time.Time `json:"oldest_expires"` // null: empty, or it never expires
	GrewInHour *int       `json:"grew_in_hour"`   // null: not watched yet
}

// apiAppQueues lists the work an app set aside: its poison, blob poison
// and parking queues, with how many messages each holds and the oldest
// one's age, read from the queues' properties, never by reading them all;
// and how much each grew in the last hour, from what the watcher kept.
func (s *AppPages) apiAppQueues(c echo.Context) error {
	ctx := c.Request().Context()
	app, owners, err := s.setAsideOf(c)
	if err != nil {
		return err
	}
	found, err := s.Queues.SetAside(ctx, app, owners)
	if err != nil {
		// A class of failure, in Fusebox's words (queues.Source).
		return echo.NewHTTPError(http.StatusBadGateway, "The app's queue storage could not be read: "+err.Error()).SetInternal(err)
	}
	kept := keptOf(c, s.Kept, s.Logger, app.ID)
	now := s.Now()
	out := struct {
		ReadAt time.Time      `json:"read_at"`
		Queues []setAsideJSON `json:"queues"`
	}{ReadAt: now, Queues: []setAsideJSON{}}
	for _, f := range found {
		q := setAsideJSON{Name: f.Name, Kind: string(f.Kind), Source: f.Source, Function: f.Function, Count: f.Count}
		if !f.Oldest.IsZero() {
			oldest := f.Oldest.UTC()
			q.Oldest = &oldest
		}
		if !f.Expires.IsZero() {
			expires := f.Expires.UTC()
			q.Expires = &expires
		}
		for _, k := range kept.Queues {
			if k.Name == f.Name {
				k.Count = f.Count
				g := k.Growth(now)
				q.GrewInHour = &g
			}
		}
		out.Queues = append(out.Queues, q)
	}
	return c.JSON(http.StatusOK, out)
}

// keptOf is what the watcher last saw of the app's queues; nothing when
// it cannot be read (the page says so through its own read).
func keptOf(c echo.Context, kept setaside.KeptReader, log *slog.Logger, appID string) setaside.AppSetAside {
	if kept == nil {
		return setaside.AppSetAside{AppID: appID}
	}
	got, err := kept.OfApp(c.Request().Context(), appID)
	if err != nil {
		log.Warn("set-aside queues not read", "app", appID, "error", err)
	}
	return got
}

// sendBackBody is the API's requeue or delete request.
type sendBackBody struct {
	To     string   `json:"to"`
	Count  int      `json:"count"`
	IDs    []string `json:"ids"`
	Reason string   `json:"reason"`
}

// apiAppQueueAction requeues (to the source queue, or to the queue the body
// names) or deletes set-aside messages: the picked ids, or up to count (at
// most queues.MaxRequeue) from the head, each taken, copied, then deleted,
// so that none is lost if Fusebox stops midway (one may be put twice, and
// the answer says how many were). An operator's action, with a reason,
// audited.
func (s *AppPages) apiAppQueueAction(requeue bool) echo.HandlerFunc {
	return func(c echo.Context) error {
		var b sendBackBody
		if err := c.Bind(&b); err != nil {
			return echo.NewHTTPError(http.StatusBadRequest, `The body must be JSON: {"reason": "...", "count": 100, "ids": ["..."], "to": "orders"}.`)
		}
		app, q, err := s.setAsideQueue(c)
		if err != nil {
			return err
		}
		body := sendback.Request(b)
		if !requeue {
			body.To = ""
		} else if body.To == "" {
			body.To = q.Source
		}
		if msg := body.Check(q.Name, requeue); msg != "" {
			return c.JSON(http.StatusUnprocessableEntity, map[string]string{"error": msg})
		}
		n := body.Count
		if n == 0 || n > queues.MaxRequeue {
			n = queues.MaxRequeue
		}
		if len(body.IDs) == 0 {
			body.IDs = nil // none picked: from the head
		}
		p, _ := principal(c)
		done, err := s.SendBack.Do(c.Request().Context(), app, queues.Move{From: q.Name, To: body.To, IDs: body.IDs, N: n}, p.Name, body.Reason)
		if err != nil {
			return err // not audited: a 500 that says nothing of storage
		}
		status := http.StatusOK
		if done.Stopped != nil {
			status = http.StatusBadGateway
		}
		return c.JSON(status, map[string]any{"moved": done.Moved.Moved, "doubled": done.Doubled, "to": body.To, "error": errText(done.Stopped)})
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
