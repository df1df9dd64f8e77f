package web

import (
	"time"

	"golang.org/x/time/rate"

	"github.com/fusebox/fusebox/internal/auth"
)

// The handler groups, one per room. Each holds the shared core (the
// Services and the helpers that render and answer) and what only it keeps
// between requests; its handlers are in the files named for the room.

// Intake takes what machines send: failure reports, OTLP exports and
// job pings, each behind a key of its own.
type Intake struct {
	*core

	unknownPings *ttlSet       // ping ids found not to exist lately
	pingCreates  *rate.Limiter // bounds the jobs the ping key's ?create=1 makes
	decoding     *exportSlots  // exports decoded at once, once their bodies are read
	pingSecrets  *pingSecrets  // the ping tokens of jobs read lately, hashed
}

// SignIn signs people in and out, locally or through OpenID Connect.
type SignIn struct {
	*core
	identity
}

type identity = Identity

// CircuitPages list and show circuits, their episodes, and edit their
// settings (pages and API).
type CircuitPages struct {
	*core
	hosts *HostPanels
}

// SwitchPages trip, resume, throttle and acknowledge circuits by hand,
// one or a storm of them, and resume Event Hubs functions from before
// their first failure.
type SwitchPages struct {
	*core
	hosts *HostPanels
	links *LinkPages
	pages *CircuitPages // the circuit's JSON and its error groups
}

// LinkPages are what a mailed signed link opens: resume or apply a
// throttle, with or without signing in.
type LinkPages struct {
	*core
	hosts    *HostPanels
	switches *SwitchPages
	pages    *CircuitPages
}

// HostPanels show what a circuit's host keeps in its own storage
// (checkpoints, concurrency, timer status, set-aside work) and forecast
// its pauses.
type HostPanels struct {
	*core
}

// DownstreamPages name the dependencies many functions call, and trip,
// try and resume their members together (pages and API).
type DownstreamPages struct {
	*core
}

// AppPages register function apps, issue their keys, and show the
// work they set aside.
type AppPages struct {
	*core
}

// JobPages show jobs, their runs and gaps, and edit them.
type JobPages struct {
	*core

	weeks        *weekAssessor
	unknownPings *ttlSet
	pingSecrets  *pingSecrets // forgotten when a token is rotated here
}

// WindowPages set and end maintenance windows, in which jobs are not
// expected and circuits of the apps they cover do not trip.
type WindowPages struct {
	*core
}

// NotifyPages edit alert channels and show what was sent.
type NotifyPages struct {
	*core
}

// OpsPages are what operators look at about Fusebox itself: the
// overview, the audit log, locks, and the probes.
type OpsPages struct {
	*core

	weeks     *weekAssessor
	started   time.Time  // readiness allows the first ticks their time
	readiness *readiness // the last /readyz answer, for a second
}

// TeamPages are the admins' Teams page and API: teams, their members,
// Azure scopes, apps and default channels; and who a token is (/me).
type TeamPages struct {
	*core
}

// TokenPages issue, list and revoke the API tokens people issue.
type TokenPages struct {
	*core
	// issued verifies the tokens and forgets its list when one is issued
	// or revoked here.
	issued *auth.Issued
}
