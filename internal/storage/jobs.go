package storage

import (
	"context"
	"fmt"
	"time"

	"github.com/fusebox/fusebox/internal/jobs"
	"github.com/fusebox/fusebox/internal/tablestore"
)

// Jobs holds one row per job in one partition: the overview lists them all.
type Jobs struct{ table *tablestore.Table }

const jobsPartition = "job"

type jobRow struct {
	tablestore.Meta // PartitionKey: "job"; RowKey: job id
	Name            string
	AppID           string
	Function        string
	Schedule        string
	TimeZone        string
	Status          string
	LastRunAt       time.Time
}

// List returns every job, ordered by id.
func (j *Jobs) List(ctx context.Context) ([]jobs.Job, error) {
	rows, err := tablestore.All[jobRow](ctx, j.table, tablestore.Query{Filter: tablestore.PartitionIs(jobsPartition)})
	if err != nil {
		return nil, fmt.Errorf("storage: list jobs: %w", err)
	}
	out := make([]jobs.Job, 0, len(rows))
	for _, r := range rows {
		st, err := jobs.ParseStatus(r.Status)
		if err != nil {
			return nil, fmt.Errorf("storage: job %s: %w", r.RowKey, err)
		}
		out = append(out, jobs.Job{
			ID: r.RowKey, Name: r.Name, AppID: r.AppID, Function: r.Function,
			Schedule: r.Schedule, TimeZone: r.TimeZone, Status: st, LastRunAt: r.LastRunAt,
		})
	}
	return out, nil
}

// Put creates or replaces a job.
func (j *Jobs) Put(ctx context.Context, job jobs.Job) error {
	row := &jobRow{
		Meta: tablestore.Meta{PartitionKey: jobsPartition, RowKey: job.ID},
		Name: job.Name, AppID: job.AppID, Function: job.Function, Schedule: job.Schedule,
		TimeZone: job.TimeZone, Status: job.Status.String(), LastRunAt: job.LastRunAt,
	}
	if err := j.table.Upsert(ctx, row); err != nil {
		return fmt.Errorf("storage: put job %s: %w", job.ID, err)
	}
	return nil
}
