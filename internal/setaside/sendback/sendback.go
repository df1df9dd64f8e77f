// Package sendback sends an app's set-aside messages back to work, or
// deletes them, for a person who asked: at once for a bounded number (the
// API), or in the background with its progress kept in storage for the
// queue's page (any number). Every run ends in one audit line that says
// who, why, how many, and how many may have been put twice.
package sendback

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/fusebox/fusebox/internal/audit"
	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/setaside"
	"github.com/fusebox/fusebox/internal/setaside/queues"
)

// ErrBusy is a queue with a run still going.
var ErrBusy = errors.New("sendback: this queue is being sent back already: wait for that run to end")

// Stale is how long a run may go without progress before it is taken for
// dead (its instance stopped): a new one may then start. What it had taken
// is back in the queue by then (queues hold messages for a minute).
const Stale = 2 * time.Minute

// Runner runs send-backs.
type Runner struct {
	Queues interface {
		Run(ctx context.Context, app circuit.App, mv queues.Move, progress func(queues.Moved)) (queues.Moved, error)
	}
	Runs interface {
		PutRun(ctx context.Context, appID string, r setaside.Run) error
		OfApp(ctx context.Context, appID string) (setaside.AppSetAside, error)
	}
	Audit interface {
		Append(ctx context.Context, e audit.Entry) error
	}
	Now    func() time.Time
	Logger *slog.Logger
	// Life is the context background runs live in (Fusebox's own); Limit
	// bounds one run, default 15 minutes.
	Life  context.Context
	Limit time.Duration
}

// Running says whether r is still going at now.
func Running(r setaside.Run, now time.Time) bool {
	return r.EndedAt.IsZero() && !r.StartedAt.IsZero() && now.Sub(r.UpdatedAt) < Stale
}

// Outcome is what a send-back did, and why it stopped early (Fusebox's
// words: queues.Source classes the failure); Stopped is nil when it did
// all it was asked.
type Outcome struct {
	queues.Moved
	Stopped error
}

// Do runs a send-back within ctx (at most 30 s) and audits it: the API's,
// bounded by the caller (queues.MaxRequeue). The error is the audit
// line's: an action that could not be audited is an error.
func (r *Runner) Do(ctx context.Context, app circuit.App, mv queues.Move, by, reason string) (Outcome, error) {
	run, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	moved, err := r.Queues.Run(run, app, mv, nil)
	return Outcome{Moved: moved, Stopped: err}, r.audit(context.WithoutCancel(ctx), app, mv, moved, err, by, reason)
}

// Start begins a send-back in the background and returns at once; the
// queue's runs (storage) show its progress. One run per queue at a time.
func (r *Runner) Start(ctx context.Context, app circuit.App, mv queues.Move, by, reason string) error {
	kept, err := r.Runs.OfApp(ctx, app.ID)
	if err != nil {
		return err
	}
	now := r.Now()
	if Running(kept.Runs[mv.From], now) {
		return ErrBusy
	}
	run := setaside.Run{Queue: mv.From, To: mv.To, Total: mv.N, StartedAt: now, UpdatedAt: now, By: by, Reason: reason}
	if mv.IDs != nil {
		run.Total = len(mv.IDs)
	}
	if err := r.Runs.PutRun(ctx, app.ID, run); err != nil {
		return err
	}
	limit := r.Limit
	if limit <= 0 {
		limit = 15 * time.Minute
	}
	life := r.Life
	if life == nil {
		life = context.Background()
	}
	go func() {
		ctx, cancel := context.WithTimeout(life, limit)
		defer cancel()
		moved, err := r.Queues.Run(ctx, app, mv, func(m queues.Moved) {
			run.Moved, run.Doubled, run.UpdatedAt = m.Moved, m.Doubled, r.Now()
			if perr := r.Runs.PutRun(ctx, app.ID, run); perr != nil {
				r.log().Warn("send-back progress not recorded", "app", app.ID, "queue", mv.From, "error", perr)
			}
		})
		end, cancelEnd := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancelEnd()
		run.Moved, run.Doubled, run.UpdatedAt, run.EndedAt = moved.Moved, moved.Doubled, r.Now(), r.Now()
		if err != nil {
			run.Error = err.Error() // Fusebox's words: queues.Source classes the failure
		}
		if perr := errors.Join(r.Runs.PutRun(end, app.ID, run), r.audit(end, app, mv, moved, err, by, reason)); perr != nil {
			r.log().Warn("send-back end not recorded", "app", app.ID, "queue", mv.From, "error", perr)
		}
	}()
	return nil
}

func (r *Runner) log() *slog.Logger {
	if r.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return r.Logger
}

// audit writes the one line a run leaves.
func (r *Runner) audit(ctx context.Context, app circuit.App, mv queues.Move, moved queues.Moved, runErr error, by, reason string) error {
	action, detail := "requeued", fmt.Sprintf("%d moved from %s to %s", moved.Moved, mv.From, mv.To)
	if mv.To == "" {
		action, detail = "deleted set-aside messages", fmt.Sprintf("%d deleted from %s", moved.Moved, mv.From)
	}
	if mv.IDs != nil {
		detail += fmt.Sprintf(" (%d picked)", len(mv.IDs))
	}
	if moved.Doubled > 0 {
		detail += fmt.Sprintf(", %d put on %s but still in %s (they may be processed twice)", moved.Doubled, mv.To, mv.From)
	}
	if runErr != nil {
		detail += "; stopped: " + runErr.Error()
	}
	return r.Audit.Append(ctx, audit.Entry{At: r.Now(), Actor: by, Action: action, Target: app.ID + "/" + mv.From, Detail: detail + ". Reason: " + reason})
}

// Request is what a requeue or delete asks for, checked before anything
// is read: the API's and the page's.
type Request struct {
	To     string
	Count  int
	IDs    []string
	Reason string
}

// maxIDLength bounds a message id a request names (the service's are
// GUIDs).
const maxIDLength = 100

// Check says what is wrong with the request, in words for its sender;
// delete requests name no target.
func (r Request) Check(from string, requeue bool) string {
	if msg := audit.CheckReason(r.Reason, "the audit log"); msg != "" {
		return msg
	}
	switch {
	case requeue && r.To == "":
		return "This queue has no source to go back to: name one in \"to\"."
	case requeue && (!setaside.ValidQueueName(r.To) || r.To == from):
		return "\"to\" must be another queue's name: 3 to 63 lowercase letters, digits and single hyphens."
	case r.Count < 0:
		return "\"count\" must be positive, or left out for as many as one request moves."
	case len(r.IDs) > queues.MaxPeek:
		return "Pick at most 32 messages (those a peek shows), or none to take from the head."
	}
	for _, id := range r.IDs {
		if id == "" || len(id) > maxIDLength {
			return "Each of \"ids\" must be a message id from a peek."
		}
	}
	return ""
}
