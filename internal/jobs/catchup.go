package jobs

import (
	"context"
	"fmt"
	"time"

	"github.com/fusebox/fusebox/internal/audit"
)

// CatchUps carries out misfire policies: it runs the function of a job's
// missed slot once, now, through the function's host, claiming the slot
// first so that many Fusebox instances run it once.
type CatchUps struct {
	// TriggerHeld says whether a circuit holds the function's trigger
	// off. An error is not "no": the slot stays owed (the guard fails
	// closed), since Fusebox stopped that trigger on purpose.
	TriggerHeld func(ctx context.Context, appID, function string) (bool, error)
	// Claim claims the catch-up of a slot: true the first time only.
	Claim func(ctx context.Context, jobID string, slot, now time.Time) (bool, error)
	// Run starts the function once, now.
	Run   func(ctx context.Context, appID, function string) error
	Pings Recorder
	Audit func(context.Context, audit.Entry) error
	// Warn logs what could not be recorded of a run that happened.
	Warn func(msg string, args ...any)
}

// Do catches up one missed slot of j; false when it did not run it.
func (c CatchUps) Do(ctx context.Context, j Job, slot, now time.Time) (bool, error) {
	held, err := c.TriggerHeld(ctx, j.AppID, j.Function)
	if err != nil {
		return false, fmt.Errorf("catch-up of %s: read its circuit: %w", j.Name, err)
	}
	if held {
		return false, nil
	}
	claimed, err := c.Claim(ctx, j.ID, slot, now)
	if err != nil || !claimed {
		return false, err
	}
	runCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	detail := "slot " + slot.UTC().Format(time.RFC3339) + " (" + j.Misfire + ")"
	if err := c.Run(runCtx, j.AppID, j.Function); err != nil {
		_ = c.Audit(context.WithoutCancel(ctx), audit.Entry{At: now, Actor: "scanner", Action: "catch-up failed", Target: j.Name, Job: j.ID, Detail: detail + ": " + err.Error()})
		return false, err
	}
	// The function runs now: record it even if the pass is ending (its
	// lease lost), or the run would happen without a trace.
	recordCtx, cancelRecord := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancelRecord()
	note := []byte("catch-up run of the slot of " + slot.UTC().Format("Mon 2 Jan 15:04 MST") + ", started by Fusebox (misfire policy " + j.Misfire + ")")
	if err := c.Pings.Record(recordCtx, j, Ping{Event: EventLog, Exit: -1, At: now, Body: note}); err != nil {
		c.Warn("catch-up run not recorded", "job", j.Name, "error", err)
	}
	return true, c.Audit(recordCtx, audit.Entry{At: now, Actor: "scanner", Action: "caught up job", Target: j.Name, Job: j.ID, Detail: detail})
}
