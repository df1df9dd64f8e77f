package storage

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync/atomic"
	"time"

	"github.com/fusebox/fusebox/internal/jobs"
	"github.com/fusebox/fusebox/internal/lease"
	"github.com/fusebox/fusebox/internal/sealed"
	"github.com/fusebox/fusebox/internal/tablestore"
)

// Jobs holds one row per job in one partition: the overview lists them all.
type Jobs struct {
	table  *tablestore.Table
	faults *Faults
	box    *sealed.Box // seals PingToken; nil: as given
	writes atomic.Int64
	// touches groups the last-run merges of pings arriving together.
	touches touchGroup
}

// Writes counts the jobs made, changed or deleted through j: a reader
// that keeps a list of jobs lists again when it moved.
func (j *Jobs) Writes() int64 { return j.writes.Load() }

const jobsPartition = "job"

// ErrNoJob is a job that does not exist.
var ErrNoJob = jobs.ErrNoJob

type jobRow struct {
	tablestore.Meta    // PartitionKey: "job"; RowKey: job id
	Name               string
	Slug               string
	AppID              string
	Function           string
	Schedule           string
	TimeZone           string
	GraceSeconds       int32
	MaxDurationSeconds int32
	MinDurationSeconds int32 // optional: a shorter run is an alert
	FailAfter          int32 // optional: failed runs in a row before failing (0: 1)
	RecoverAfter       int32 // optional: good runs in a row before up again (0: 1)
	Recipients         string
	Channels           string // comma-separated channel ids
	Tags               string // comma-separated tags
	Misfire            string // "", once or each
	Team               string // a job of no app: the team that owns it
	Paused             bool
	CreatedAt          time.Time
	Status             string
	LastRunAt          time.Time
	LastStartAt        time.Time // when a /start ping last came
	ExtraRuns          int64     // runs counted, not stored: past jobs.MaxRunsPerSlot in a slot's window
	FenceLease         string
	FenceGeneration    int64
	PingToken          string    // sealed: the job's ping secret
	PingByIDSince      time.Time // migrated jobs: when the id's grace began
}

func (r *jobRow) secrets() map[string]*string { return map[string]*string{"PingToken": &r.PingToken} }

// open opens the row's sealed fields.
func (j *Jobs) open(r jobRow) (jobs.Job, error) {
	if err := openSecrets(j.box, TableJobs, &r); err != nil {
		return jobs.Job{}, fmt.Errorf("storage: job %s: %w", r.RowKey, err)
	}
	return r.job()
}

// Reseal seals the ping tokens kept in plain text (migration 11 writes
// them so) or under an older key, and returns how many it sealed.
func (j *Jobs) Reseal(ctx context.Context) (int, error) {
	return reseal[jobRow](ctx, j.box, j.table, tablestore.Query{Filter: tablestore.PartitionIs(jobsPartition)}, TableJobs)
}

// RotatePingToken gives a job a new ping token and ends its id's grace;
// the old token stops pinging at once.
func (j *Jobs) RotatePingToken(ctx context.Context, id string) (string, error) {
	token, err := jobs.NewPingToken(id)
	if err != nil {
		return "", err
	}
	for range 3 {
		var row jobRow
		if err := j.table.Get(ctx, jobsPartition, id, &row); err != nil {
			if errors.Is(err, tablestore.ErrNotFound) {
				return "", fmt.Errorf("%w: %s", ErrNoJob, id)
			}
			return "", fmt.Errorf("storage: rotate the ping token of job %s: %w", id, err)
		}
		row.PingToken, row.PingByIDSince = token, time.Time{}
		sealSecrets(j.box, TableJobs, &row)
		err := j.table.Update(ctx, &row)
		if errors.Is(err, tablestore.ErrConflict) {
			continue
		}
		if err != nil {
			return "", fmt.Errorf("storage: rotate the ping token of job %s: %w", id, err)
		}
		return token, nil
	}
	return "", fmt.Errorf("storage: rotate the ping token of job %s: %w", id, jobs.ErrConflict)
}

// GivePingTokens is migration 11: every job without a ping token gets
// one, written in plain text for the start's reseal to seal, and keeps
// answering to its id from now for the grace the operator chooses. Run
// again, it finds the tokens given.
func GivePingTokens(ctx context.Context, svc *tablestore.Service, now time.Time) error {
	t := svc.Table(TableJobs)
	for row, err := range tablestore.Rows[jobRow](ctx, t, tablestore.Query{Filter: tablestore.PartitionIs(jobsPartition)}) {
		var rowErr *tablestore.RowError
		if errors.As(err, &rowErr) {
			continue // a row that does not read is shown where it is read
		}
		if err != nil {
			return fmt.Errorf("storage: give ping tokens: %w", err)
		}
		if row.PingToken != "" || jobs.InternalID(row.RowKey) {
			continue
		}
		token, err := jobs.NewPingToken(row.RowKey)
		if err != nil {
			continue // an id that is no UUID cannot have been pinged
		}
		row.PingToken, row.PingByIDSince = token, now
		if err := t.Update(ctx, &row); err != nil && !errors.Is(err, tablestore.ErrConflict) {
			return fmt.Errorf("storage: give job %s a ping token: %w", row.RowKey, err)
		}
	}
	return nil
}

func (r jobRow) job() (jobs.Job, error) {
	st, err := jobs.ParseStatus(r.Status)
	if err != nil {
		return jobs.Job{}, fmt.Errorf("storage: job %s: %w", r.RowKey, err)
	}
	// A misfire policy runs functions: a value this version does not know
	// must not be read as one it does.
	switch r.Misfire {
	case jobs.MisfireOff, jobs.MisfireOnce, jobs.MisfireEach:
	default:
		return jobs.Job{}, fmt.Errorf("storage: job %s: unknown Misfire %q (want empty, once or each)", r.RowKey, r.Misfire)
	}
	if r.FailAfter < 0 || r.RecoverAfter < 0 || r.MinDurationSeconds < 0 {
		return jobs.Job{}, fmt.Errorf("storage: job %s: FailAfter, RecoverAfter and MinDurationSeconds must not be negative", r.RowKey)
	}
	recipients := commaList(r.Recipients)
	return jobs.Job{
		ID: r.RowKey, Name: r.Name, Slug: r.Slug, AppID: r.AppID, Function: r.Function, Schedule: r.Schedule, TimeZone: r.TimeZone,
		Grace: time.Duration(r.GraceSeconds) * time.Second, MaxDuration: time.Duration(r.MaxDurationSeconds) * time.Second,
		MinDuration: time.Duration(r.MinDurationSeconds) * time.Second, FailAfter: int(r.FailAfter), RecoverAfter: int(r.RecoverAfter),
		Recipients: recipients, Channels: commaList(r.Channels), Tags: commaList(r.Tags), Misfire: r.Misfire, Team: r.Team, Paused: r.Paused, CreatedAt: r.CreatedAt, Status: st, LastRunAt: r.LastRunAt, LastStartAt: r.LastStartAt, ExtraRuns: max(r.ExtraRuns, 0), Version: string(r.ETag),
		PingToken: r.PingToken, PingByIDSince: r.PingByIDSince,
	}, nil
}

func (r *jobRow) set(j jobs.Job) {
	r.setSettings(j)
	r.PingToken, r.PingByIDSince = j.PingToken, j.PingByIDSince
	r.CreatedAt, r.Status, r.LastRunAt = j.CreatedAt, j.Status.String(), j.LastRunAt
}

// setSettings writes what people set, and nothing that runs and the
// scanner write.
func (r *jobRow) setSettings(j jobs.Job) {
	r.Name, r.Slug, r.AppID, r.Function, r.Schedule, r.TimeZone = j.Name, j.Slug, j.AppID, j.Function, j.Schedule, j.TimeZone
	r.Team = j.Team
	r.GraceSeconds, r.MaxDurationSeconds = int32(j.Grace/time.Second), int32(j.MaxDuration/time.Second)
	r.MinDurationSeconds, r.FailAfter, r.RecoverAfter = int32(j.MinDuration/time.Second), int32(j.FailAfter), int32(j.RecoverAfter)
	r.Channels, r.Tags, r.Misfire = strings.Join(j.Channels, ","), strings.Join(j.Tags, ","), j.Misfire
	r.Recipients, r.Paused = strings.Join(j.Recipients, ","), j.Paused
}

// List returns every job, ordered by id.
func (j *Jobs) List(ctx context.Context) ([]jobs.Job, error) {
	out, faults, err := readRows[jobRow](ctx, j.table, tablestore.Query{Filter: tablestore.PartitionIs(jobsPartition)}, TableJobs, j.open)
	if err != nil {
		return nil, fmt.Errorf("storage: list jobs: %w", err)
	}
	j.faults.Replace(TableJobs+" (jobs)", faults)
	return out, nil
}

// Get reads one job by id.
func (j *Jobs) Get(ctx context.Context, id string) (jobs.Job, error) {
	if id == "" || len(id) > 64 || strings.ContainsAny(id, "/\\#?") {
		return jobs.Job{}, fmt.Errorf("%w: %q", ErrNoJob, id)
	}
	var row jobRow
	if err := j.table.Get(ctx, jobsPartition, id, &row); err != nil {
		if errors.Is(err, tablestore.ErrNotFound) {
			return jobs.Job{}, fmt.Errorf("%w: %s", ErrNoJob, id)
		}
		return jobs.Job{}, fmt.Errorf("storage: get job %s: %w", id, err)
	}
	return j.open(row)
}

// Delete removes a job. Its runs and flips are left to age out with
// everyone's (their retention), unreachable from any page.
func (j *Jobs) Delete(ctx context.Context, id string) error {
	defer j.writes.Add(1)
	if _, err := j.Get(ctx, id); err != nil {
		return err
	}
	if err := j.table.Delete(ctx, jobsPartition, id, tablestore.AnyETag); err != nil && !errors.Is(err, tablestore.ErrNotFound) {
		return fmt.Errorf("storage: delete job %s: %w", id, err)
	}
	return nil
}

// BySlug finds the job with a slug.
func (j *Jobs) BySlug(ctx context.Context, slug string) (jobs.Job, error) {
	rows, err := tablestore.All[jobRow](ctx, j.table, tablestore.Query{Filter: tablestore.And(tablestore.PartitionIs(jobsPartition), tablestore.Eq("Slug", slug))})
	if err != nil {
		return jobs.Job{}, fmt.Errorf("storage: job %s: %w", slug, err)
	}
	if len(rows) == 0 || slug == "" {
		return jobs.Job{}, fmt.Errorf("%w: slug %q", ErrNoJob, slug)
	}
	return j.open(rows[0])
}

// Create stores a new job; jobs.ErrConflict when its id exists.
func (j *Jobs) Create(ctx context.Context, job jobs.Job) error {
	defer j.writes.Add(1)
	row := &jobRow{Meta: tablestore.Meta{PartitionKey: jobsPartition, RowKey: job.ID}}
	row.set(job)
	sealSecrets(j.box, TableJobs, row)
	err := j.table.Insert(ctx, row)
	if errors.Is(err, tablestore.ErrExists) {
		return fmt.Errorf("storage: create job %s: %w", job.ID, jobs.ErrConflict)
	}
	if err != nil {
		return fmt.Errorf("storage: create job %s: %w", job.ID, err)
	}
	return nil
}

// UpdateSettings replaces a job's settings on the row as it is now, so
// the status and last run written since the job was read are kept.
func (j *Jobs) UpdateSettings(ctx context.Context, job jobs.Job) error {
	defer j.writes.Add(1)
	for range 3 {
		var row jobRow
		if err := j.table.Get(ctx, jobsPartition, job.ID, &row); err != nil {
			if errors.Is(err, tablestore.ErrNotFound) {
				return fmt.Errorf("%w: %s", ErrNoJob, job.ID)
			}
			return fmt.Errorf("storage: update job %s: %w", job.ID, err)
		}
		row.setSettings(job)
		err := j.table.Update(ctx, &row)
		if errors.Is(err, tablestore.ErrConflict) {
			continue
		}
		if err != nil {
			return fmt.Errorf("storage: update job %s: %w", job.ID, err)
		}
		return nil
	}
	return fmt.Errorf("storage: update job %s: %w", job.ID, jobs.ErrConflict)
}

// Put creates or replaces a job whole (seeding, Fusebox's own loops).
func (j *Jobs) Put(ctx context.Context, job jobs.Job) error {
	defer j.writes.Add(1)
	row := &jobRow{Meta: tablestore.Meta{PartitionKey: jobsPartition, RowKey: job.ID}}
	row.set(job)
	sealSecrets(j.box, TableJobs, row)
	if err := j.table.Upsert(ctx, row); err != nil {
		return fmt.Errorf("storage: put job %s: %w", job.ID, err)
	}
	return nil
}

// SetStatus records the scanner's verdict, fenced by its lease.
func (j *Jobs) SetStatus(ctx context.Context, f lease.Fence, id string, st jobs.Status) error {
	for range 3 {
		var row jobRow
		if err := j.table.Get(ctx, jobsPartition, id, &row); err != nil {
			return fmt.Errorf("storage: job %s: %w", id, err)
		}
		if err := f.Admits(row.FenceLease, row.FenceGeneration); err != nil {
			return fmt.Errorf("storage: job %s: %w", id, err)
		}
		row.Status = st.String()
		if f.Lease != "" {
			row.FenceLease, row.FenceGeneration = f.Lease, f.Generation
		}
		err := j.table.Update(ctx, &row)
		if errors.Is(err, tablestore.ErrConflict) {
			continue
		}
		if err != nil {
			return fmt.Errorf("storage: job %s: %w", id, err)
		}
		return nil
	}
	return fmt.Errorf("storage: job %s: it kept changing", id)
}

// touchRow is what a run's arrival sets on its job's row, merged.
type touchRow struct {
	tablestore.Meta
	LastRunAt, LastStartAt time.Time // zero: left as it is
}

// TouchRead records a run's arrival on job as it was just read: one
// conditional merge of the times on the row at job.Version, no read, sent
// with the other jobs' merges waiting at the time (touchGroup). A row
// changed since falls back to Touch's read and write.
func (j *Jobs) TouchRead(ctx context.Context, job jobs.Job, at time.Time, started bool) error {
	row := &touchRow{Meta: tablestore.Meta{PartitionKey: jobsPartition, RowKey: job.ID, ETag: tablestore.ETag(job.Version)}}
	if at.After(job.LastRunAt) {
		row.LastRunAt = at
	}
	if started && at.After(job.LastStartAt) {
		row.LastStartAt = at
	}
	if row.LastRunAt.IsZero() && row.LastStartAt.IsZero() {
		return nil
	}
	if job.Version != "" {
		err := j.touches.merge(ctx, j.table, row)
		if errors.Is(err, errAlone) {
			row.ETag = tablestore.ETag(job.Version)
			err = j.table.Merge(ctx, row)
		}
		if err == nil || !errors.Is(err, tablestore.ErrConflict) {
			if err != nil {
				return fmt.Errorf("storage: touch job %s: %w", job.ID, err)
			}
			return nil
		}
	}
	return j.touch(ctx, job.ID, at, started)
}

// Touch records a run's arrival on the job, retrying if the row changed
// meanwhile. It leaves the status to the scanner.
func (j *Jobs) Touch(ctx context.Context, id string, at time.Time) error {
	return j.touch(ctx, id, at, false)
}

func (j *Jobs) touch(ctx context.Context, id string, at time.Time, started bool) error {
	return j.change(ctx, id, "touch job", func(row *jobRow) bool {
		changed := false
		if at.After(row.LastRunAt) {
			row.LastRunAt, changed = at, true
		}
		if started && at.After(row.LastStartAt) {
			row.LastStartAt, changed = at, true
		}
		return changed
	})
}

// change reads a job's row, lets fn change it (false: nothing to write)
// and writes it on condition it is as read, three times at most.
func (j *Jobs) change(ctx context.Context, id, what string, fn func(*jobRow) bool) error {
	for range 3 {
		var row jobRow
		if err := j.table.Get(ctx, jobsPartition, id, &row); err != nil {
			return fmt.Errorf("storage: %s %s: %w", what, id, err)
		}
		if !fn(&row) {
			return nil
		}
		err := j.table.Update(ctx, &row)
		if errors.Is(err, tablestore.ErrConflict) {
			continue
		}
		if err != nil {
			return fmt.Errorf("storage: %s %s: %w", what, id, err)
		}
		return nil
	}
	return fmt.Errorf("storage: %s %s: it kept changing", what, id)
}

// AddExtraRuns counts n more runs of the job that were not stored,
// retrying if the row changed meanwhile.
func (j *Jobs) AddExtraRuns(ctx context.Context, id string, n int) error {
	return j.change(ctx, id, "count extra runs of job", func(row *jobRow) bool {
		row.ExtraRuns = max(row.ExtraRuns, 0) + int64(n)
		return true
	})
}

// Job flips share the Jobs table, one partition per job: "jflip|<id>",
// newest first.
const jobFlipPrefix = "jflip|"

type jobFlipRow struct {
	tablestore.Meta // PartitionKey: "jflip|<job id>"; RowKey: inverted Unix ns of At, "|", To
	From, To        string
	At              time.Time
	Why             string
}

// AddFlip records a change of a job's status. The key is derived from the
// change, so recording it again (a pass retried) keeps one row.
func (j *Jobs) AddFlip(ctx context.Context, jobID string, fl jobs.Flip) error {
	row := &jobFlipRow{Meta: tablestore.Meta{PartitionKey: jobFlipPrefix + jobID,
		RowKey: fmt.Sprintf("%019d|%s", math.MaxInt64-fl.At.UnixNano(), fl.To)}, From: fl.From.String(), To: fl.To.String(), At: fl.At, Why: truncate(fl.Why, 1000)}
	if err := j.table.Insert(ctx, row); err != nil && !errors.Is(err, tablestore.ErrExists) {
		return fmt.Errorf("storage: job %s flip: %w", jobID, err)
	}
	return nil
}

// Flips returns a job's latest changes, newest first; rows that do not
// read are skipped.
func (j *Jobs) Flips(ctx context.Context, jobID string, limit int) ([]jobs.Flip, error) {
	var out []jobs.Flip
	for row, err := range tablestore.Rows[jobFlipRow](ctx, j.table, tablestore.Query{Filter: tablestore.PartitionIs(jobFlipPrefix + jobID), Top: int32(limit)}) {
		var rowErr *tablestore.RowError
		if errors.As(err, &rowErr) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("storage: flips of job %s: %w", jobID, err)
		}
		from, err1 := jobs.ParseStatus(row.From)
		to, err2 := jobs.ParseStatus(row.To)
		if err1 != nil || err2 != nil {
			continue
		}
		out = append(out, jobs.Flip{From: from, To: to, At: row.At, Why: row.Why})
		if len(out) >= limit {
			break
		}
	}
	return out, nil
}

// Catch-up claims share the Jobs table: "catchup|<job id>", one row per
// slot made up.
type catchUpRow struct {
	tablestore.Meta // PartitionKey: "catchup|<job id>"; RowKey: slot as Unix seconds, 19 digits
	Slot            time.Time
	ClaimedAt       time.Time
}

// ClaimCatchUp claims the catch-up run of a job's slot: true the first
// time, on whichever instance, false ever after.
func (j *Jobs) ClaimCatchUp(ctx context.Context, jobID string, slot, now time.Time) (bool, error) {
	row := &catchUpRow{Meta: tablestore.Meta{PartitionKey: "catchup|" + jobID, RowKey: fmt.Sprintf("%019d", slot.Unix())}, Slot: slot, ClaimedAt: now}
	err := j.table.Insert(ctx, row)
	if errors.Is(err, tablestore.ErrExists) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("storage: catch-up claim of job %s: %w", jobID, err)
	}
	return true, nil
}
