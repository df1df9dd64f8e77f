package web

import (
	"context"
	"time"

	"golang.org/x/time/rate"

	"github.com/fusebox/fusebox/internal/auth"
	"github.com/fusebox/fusebox/internal/azalerts"
	"github.com/fusebox/fusebox/internal/ingest"
	"github.com/fusebox/fusebox/internal/jobs"
)

// AlertTokenVerifier verifies an Authorization header's bearer token.
type AlertTokenVerifier interface {
	Verify(ctx context.Context, header string) error
}

// IntakeParts are what Intake's handlers use, given to New.
type IntakeParts struct {
	// AppKeys verify the keys of failure reports and OTLP exports.
	AppKeys *auth.AppKeys
	// Reports turn failure reports into rows (ingest.Service); OTLP
	// counts what function hosts export (ingest.Exports).
	Reports reportTaker
	OTLP    otlpTaker
	// Jobs finds a ping's job, Pings turns a ping into a run
	// (jobs.Recorder) and Catalog creates a job the ping key names.
	Jobs    pingJobs
	Pings   pingRecorder
	Catalog jobCreator
	// Alerts keeps what Azure Monitor's action groups post.
	Alerts interface {
		Add(ctx context.Context, a azalerts.Alert, received time.Time) (bool, error)
		SetOutcome(ctx context.Context, a azalerts.Alert, o azalerts.Outcome) error
	}
	// AlertTokens verify the secure webhook's Entra ID tokens; nil: off.
	AlertTokens AlertTokenVerifier
	// AlertResponder trips the circuits a fired alert's rule names, and
	// says which rule it matched, or why none.
	AlertResponder interface {
		Respond(ctx context.Context, a azalerts.Alert) (azalerts.Outcome, error)
	}
}

// missing names the required parts p lacks.
func (p IntakeParts) missing() []string {
	return absent("Intake",
		part{"AppKeys", p.AppKeys == nil},
		part{"Reports", p.Reports == nil},
		part{"OTLP", p.OTLP == nil},
		part{"Jobs", p.Jobs == nil},
		part{"Pings", p.Pings == nil},
		part{"Catalog", p.Catalog == nil},
		part{"Alerts", p.Alerts == nil},
		part{"AlertResponder", p.AlertResponder == nil},
	)
}

// Intake takes what machines send: failure reports, OTLP exports and
// job pings, each behind a key of its own.
type Intake struct {
	IntakeParts
	*core

	unknownPings *ttlSet       // ping ids found not to exist lately
	pingCreates  *rate.Limiter // bounds the jobs the ping key's ?create=1 makes
	decoding     *exportSlots  // exports decoded at once, once their bodies are read
	pingSecrets  *pingSecrets  // the ping tokens of jobs read lately, hashed
}

// What Intake holds, each the few methods its handlers call.
type (
	// pingJobs finds the job a ping names, by its ping id or its slug.
	pingJobs interface {
		Get(ctx context.Context, id string) (jobs.Job, error)
		BySlug(ctx context.Context, slug string) (jobs.Job, error)
	}
	pingRecorder interface {
		Record(ctx context.Context, job jobs.Job, p jobs.Ping) error
	}
	jobCreator interface {
		Create(ctx context.Context, j jobs.Job) error
	}
	otlpTaker interface {
		Take(ctx context.Context, e ingest.Export) (ingest.Answer, error)
	}
	reportTaker interface {
		Take(ctx context.Context, b ingest.Batch) (ingest.Result, error)
	}
)
