package web

import (
	"context"
	"time"

	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/jobs"
)

// JobParts are what JobPages's handlers use, given to New.
type JobParts struct {
	Apps      appReader
	Jobs      jobReader
	Windows   maintenanceWindows
	Tokens    pingTokens
	Catalog   jobCatalog // saves jobs by the jobs' rules (jobs.Catalog)
	RunReader runReader
	Audit     auditAppender
	// FunctionRunner runs a job's function once for "Run now"; nil hides it.
	FunctionRunner functionRunner
	// HostInsight reads a timer function's own status; nil shows none.
	HostInsight hostReader
	// Channels checks that the channels a job names exist.
	Channels channelChecker
}

// missing names the required parts p lacks.
func (p JobParts) missing() []string {
	return absent("Jobs",
		part{"Apps", p.Apps == nil},
		part{"Jobs", p.Jobs == nil},
		part{"Windows", p.Windows == nil},
		part{"Tokens", p.Tokens == nil},
		part{"Catalog", p.Catalog == nil},
		part{"RunReader", p.RunReader == nil},
		part{"Audit", p.Audit == nil},
		part{"Channels", p.Channels == nil},
	)
}

// JobPages show jobs, their runs and gaps, edit them and their
// maintenance windows.
type JobPages struct {
	JobParts
	*core

	weeks        *weekAssessor
	unknownPings *ttlSet
	pingSecrets  *pingSecrets // forgotten when a token is rotated here
}

// What JobPages holds, each the few methods its handlers call.
type (
	functionRunner interface {
		Run(ctx context.Context, app circuit.App, function string) error
	}
	jobReader interface {
		List(context.Context) ([]jobs.Job, error)
		Get(ctx context.Context, id string) (jobs.Job, error)
		Flips(ctx context.Context, jobID string, limit int) ([]jobs.Flip, error)
	}
	maintenanceWindows interface {
		Windows(ctx context.Context) ([]jobs.Window, error)
		PutWindow(ctx context.Context, w jobs.Window) error
		EndWindow(ctx context.Context, id string, t time.Time) (jobs.Window, error)
	}
	pingTokens interface {
		RotatePingToken(ctx context.Context, id string) (string, error)
	}
	jobCatalog interface {
		Create(ctx context.Context, j jobs.Job) error
		Update(ctx context.Context, j jobs.Job) error
		Delete(ctx context.Context, id string) error
	}
	runReader interface {
		Between(ctx context.Context, jobID string, from, to time.Time, limit int) ([]jobs.Run, bool, error)
		Recent(ctx context.Context, jobID string, limit int, from jobs.RunCursor) ([]jobs.StoredRun, jobs.RunCursor, error)
	}
)

// WindowPages set and end maintenance windows, in which jobs are not
// expected and circuits of the apps they cover do not trip.
type WindowPages struct {
	*core
	Apps    appReader
	Windows maintenanceWindows
	Audit   auditAppender
}
