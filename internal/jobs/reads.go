package jobs

import (
	"context"
	"time"
)

// What the pages and the ping intake read and change of jobs, as
// internal/storage spells it (storage.Jobs and storage.Runs). Saving a
// job's settings goes through Catalog, which keeps the jobs' rules.

// Records reads jobs and their flip logs.
type Records interface {
	List(ctx context.Context) ([]Job, error)
	Get(ctx context.Context, id string) (Job, error)
	BySlug(ctx context.Context, slug string) (Job, error)
	Flips(ctx context.Context, jobID string, limit int) ([]Flip, error)
	// RotatePingToken gives a job a new ping token and returns it.
	RotatePingToken(ctx context.Context, id string) (string, error)
}

// WindowStore keeps maintenance windows.
type WindowStore interface {
	Windows(ctx context.Context) ([]Window, error)
	PutWindow(ctx context.Context, w Window) error
	EndWindow(ctx context.Context, id string, t time.Time) (Window, error)
}

// RunReader reads a job's stored runs.
type RunReader interface {
	Between(ctx context.Context, jobID string, from, to time.Time, limit int) ([]Run, bool, error)
	Recent(ctx context.Context, jobID string, limit int, from RunCursor) ([]StoredRun, RunCursor, error)
}
