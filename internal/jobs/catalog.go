package jobs

import (
	"context"
	"errors"
	"fmt"
)

// Store is what saving jobs needs of storage.
type Store interface {
	BySlug(ctx context.Context, slug string) (Job, error)
	// Create stores a new job; ErrConflict when its id exists.
	Create(ctx context.Context, j Job) error
	// UpdateSettings replaces a job's settings and keeps what runs and
	// the scanner wrote meanwhile: status, last run, creation time.
	UpdateSettings(ctx context.Context, j Job) error
	// Delete removes a job; ErrNoJob when there is none.
	Delete(ctx context.Context, id string) error
}

// ErrInternal is a change Fusebox's own loops' jobs do not take.
var ErrInternal = errors.New("jobs: Fusebox's own loops' jobs are kept by Fusebox")

// Catalog saves jobs by the rules every job keeps: valid settings, and a
// slug that names one job only (a slug ping must not feed two jobs, nor
// the wrong one).
type Catalog struct {
	Store Store
}

// Create saves a new job.
func (c Catalog) Create(ctx context.Context, j Job) error {
	if err := c.check(ctx, j); err != nil {
		return err
	}
	if j.PingToken == "" {
		token, err := NewPingToken(j.ID)
		if err != nil {
			return err
		}
		j.PingToken = token
	}
	return c.Store.Create(ctx, j)
}

// Update saves an existing job's settings.
func (c Catalog) Update(ctx context.Context, j Job) error {
	if err := c.check(ctx, j); err != nil {
		return err
	}
	return c.Store.UpdateSettings(ctx, j)
}

// Delete removes a job that is not one of Fusebox's own loops'.
func (c Catalog) Delete(ctx context.Context, id string) error {
	if InternalID(id) {
		return ErrInternal
	}
	return c.Store.Delete(ctx, id)
}

func (c Catalog) check(ctx context.Context, j Job) error {
	if err := j.Validate(); err != nil {
		return err
	}
	if j.Slug == "" {
		return nil
	}
	other, err := c.Store.BySlug(ctx, j.Slug)
	switch {
	case errors.Is(err, ErrNoJob):
		return nil
	case err != nil:
		return fmt.Errorf("jobs: check slug %q: %w", j.Slug, err)
	case other.ID != j.ID:
		return ValidationError{{Field: "slug", Message: fmt.Sprintf("the job %q already answers to this slug", other.Name)}}
	}
	return nil
}
