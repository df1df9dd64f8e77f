package web

import (
	"errors"
	"net/http"
	"net/url"
	"sort"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/fusebox/fusebox/internal/setaside"
	"github.com/fusebox/fusebox/internal/setaside/queues"
	"github.com/fusebox/fusebox/internal/setaside/sendback"
	"github.com/fusebox/fusebox/internal/views"
)

// Bodies are cut to shortBody runes in the table; operators may open up to
// fullBody runes (a queue message is at most 64 KiB).
const (
	shortBody = 300
	fullBody  = 64 * 1024
)

func queueHref(appID, queue string) string {
	return "/apps/" + url.PathEscape(appID) + "/queues/" + url.PathEscape(queue)
}

// setAsideRows are the kept queues worth showing: those holding work, or
// that held some in the last hour; when function is set, only its own.
func setAsideRows(kept setaside.AppSetAside, function string, now time.Time) []views.SetAsideRow {
	var rows []views.SetAsideRow
	for _, k := range kept.Queues {
		if function != "" && k.Function != function {
			continue
		}
		if k.Count == 0 && k.Growth(now) == 0 {
			continue // empty, and was all the last hour
		}
		rows = append(rows, setAsideRow(kept.AppID, k, now))
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].Count > rows[j].Count })
	return rows
}

func setAsideRow(appID string, k setaside.Kept, now time.Time) views.SetAsideRow {
	r := views.SetAsideRow{App: appID, Name: k.Name, Kind: string(k.Kind), Source: k.Source, Function: k.Function, Count: k.Count,
		Oldest: k.Oldest, Expires: k.Expires, Growth: k.Growth(now), ReadAt: k.ReadAt, Href: queueHref(appID, k.Name)}
	if k.Function != "" {
		r.FunctionHref = "/circuits/" + url.PathEscape(appID) + "/" + url.PathEscape(k.Function)
	}
	return r
}

// functionSetAside is what the function's own set-aside queues hold, for
// its circuit page and the resume pages.
func (s *HostPanels) functionSetAside(c echo.Context, appID, function string) []views.SetAsideRow {
	if s.Kept == nil {
		return nil
	}
	return setAsideRows(keptOf(c, s.Kept, s.Logger, appID), function, s.Now())
}

// appQueuesShow lists the app's set-aside queues as the watcher last saw
// them: no read of the app's storage, whatever they hold.
func (s *AppPages) appQueuesShow(c echo.Context) error {
	app, _, err := s.setAsideOf(c)
	if err != nil {
		return err
	}
	kept := keptOf(c, s.Kept, s.Logger, app.ID)
	return render(c, http.StatusOK, views.AppQueuesPage(views.AppQueues{Page: s.page(c, "Set aside: "+app.ID, "apps"), AppID: app.ID, App: app.ID,
		Rows: setAsideRows(kept, "", s.Now()), Problem: kept.Problem}))
}

// queueShow shows one set-aside queue: what the watcher last saw, the
// latest send-back, and a peek at its head (bodies as text, cut; the whole
// body for operators only).
func (s *AppPages) queueShow(c echo.Context) error {
	app, q, err := s.setAsideQueue(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	now := s.Now()
	kept := keptOf(c, s.Kept, s.Logger, app.ID)
	k, _ := keptNamed(kept, q.Name)
	k.Queue = q // the owners as the circuits say now
	m := views.Queue{Page: s.page(c, q.Name, "apps"), AppID: app.ID, App: app.ID, Base: queueHref(app.ID, q.Name),
		Row: setAsideRow(app.ID, k, now), CanAct: scopeOf(c).ActsAnywhere()}
	if r, ok := kept.Runs[q.Name]; ok {
		m.Run = queueRun(r, now)
	}
	msgs, err := s.Queues.Peek(ctx, app, q.Name, queues.MaxPeek, fullBody)
	if err != nil {
		m.PeekError = err.Error() // Fusebox's words (queues.Source)
	}
	for _, msg := range msgs {
		v := views.QueueMessage{ID: msg.ID, Inserted: msg.Inserted, DequeueCount: msg.DequeueCount, Decoded: msg.Body.Decoded}
		short := []rune(msg.Body.Text)
		v.Short, v.Cut = msg.Body.Text, msg.Body.Cut
		if len(short) > shortBody {
			v.Short, v.Cut = string(short[:shortBody]), true
		}
		if m.CanAct && v.Cut {
			v.Full = msg.Body.Text
		}
		m.Messages = append(m.Messages, v)
	}
	return render(c, http.StatusOK, views.QueuePage(m))
}

// keptNamed is what the watcher last saw of one queue.
func keptNamed(kept setaside.AppSetAside, name string) (setaside.Kept, bool) {
	for _, k := range kept.Queues {
		if k.Name == name {
			return k, true
		}
	}
	return setaside.Kept{}, false
}

func queueRun(r setaside.Run, now time.Time) *views.QueueRun {
	v := &views.QueueRun{What: "Requeue to " + r.To, By: r.By, Reason: r.Reason, Total: r.Total, Moved: r.Moved, Doubled: r.Doubled,
		Started: r.StartedAt, Ended: r.EndedAt, Error: r.Error, Running: sendback.Running(r, now)}
	if r.To == "" {
		v.What = "Delete"
	}
	v.Died = r.EndedAt.IsZero() && !v.Running
	return v
}

// queueAct asks, then requeues or deletes the picked messages or all of
// them, in the background; the queue's page shows the progress.
func (s *AppPages) queueAct(c echo.Context) error {
	app, q, err := s.setAsideQueue(c)
	if err != nil {
		return err
	}
	form, err := c.FormParams()
	if err != nil {
		return echo.NewHTTPError(http.StatusBadRequest, "The form could not be read.")
	}
	requeue := c.FormValue("action") == "requeue"
	all := c.FormValue("scope") == "all"
	req := sendback.Request{To: c.FormValue("to"), Reason: c.FormValue("reason")}
	if !all {
		req.IDs = form["id"]
	}
	if !requeue {
		req.To = ""
	}
	msg := req.Check(q.Name, requeue)
	if msg == "" && !all && len(req.IDs) == 0 {
		msg = "Pick the messages to send back, or choose every message."
	}
	if msg != "" {
		return echo.NewHTTPError(http.StatusUnprocessableEntity, msg)
	}
	k, _ := keptNamed(keptOf(c, s.Kept, s.Logger, app.ID), q.Name)
	count := k.Count
	action := "delete"
	if requeue {
		action = "requeue"
	}
	if c.FormValue("confirmed") != "yes" {
		return render(c, http.StatusOK, views.QueueConfirmPage(views.QueueConfirm{Page: s.page(c, action+" "+q.Name, "apps"), App: app.ID, Queue: q.Name,
			Base: queueHref(app.ID, q.Name), Action: action, To: req.To, IDs: req.IDs, All: all, Count: count, Reason: req.Reason}))
	}
	mv := queues.Move{From: q.Name, To: req.To, IDs: req.IDs, N: max(count, queues.MaxPeek)}
	p, _ := principal(c)
	if err := s.SendBack.Start(c.Request().Context(), app, mv, p.Name, req.Reason); err != nil {
		if errors.Is(err, sendback.ErrBusy) {
			return echo.NewHTTPError(http.StatusConflict, "A send-back of this queue is still running: its progress is on the queue's page.")
		}
		return err
	}
	s.setFlash(c, "sendback-started")
	return c.Redirect(http.StatusSeeOther, queueHref(app.ID, q.Name))
}
