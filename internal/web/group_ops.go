package web

import (
	"context"
	"github.com/fusebox/fusebox/internal/auth"
	"github.com/fusebox/fusebox/internal/azalerts"
	"time"

	"github.com/fusebox/fusebox/internal/audit"
	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/fault"
	"github.com/fusebox/fusebox/internal/hostinsight"
	"github.com/fusebox/fusebox/internal/lease"
)

// OpsParts are what OpsPages's handlers use, given to New.
type OpsParts struct {
	Apps     appReader
	Circuits recentCircuits
	Counter  failingCounter
	Rates    rateReader
	Status   statusReader
	Jobs     jobLister
	Kept     keptSetAside
	Audit    auditLog
	Leases   leaseLister
	// Faults lists stored rows that could not be read.
	Faults faultLister
	// Delivery reads the destinations the sender finds failing.
	Delivery deliveryReader
	// HostInsight reads and breaks the hosts' own locks; nil shows none.
	HostInsight hostLocks
	// Ready reports whether Fusebox can serve: storage reachable and
	// migrations applied.
	Ready func(context.Context) error
	// Tokens keeps the API tokens people issue; Issued verifies them and
	// forgets its list when one is issued or revoked here.
	Tokens tokenStore
	Issued *auth.Issued
	// TeamStore keeps the teams defined on the Teams page; AppTeams moves
	// apps between them; Channels checks a team's default channels.
	TeamStore teamStore
	AppTeams  appTeamSetter
	Channels  channelChecker
	// Alerts lists what Azure Monitor's action groups posted.
	Alerts interface {
		Recent(ctx context.Context, now time.Time) ([]azalerts.Received, error)
	}
}

// missing names the required parts p lacks.
func (p OpsParts) missing() []string {
	return absent("Ops",
		part{"Apps", p.Apps == nil},
		part{"TeamStore", p.TeamStore == nil},
		part{"AppTeams", p.AppTeams == nil},
		part{"Channels", p.Channels == nil},
		part{"Alerts", p.Alerts == nil},
		part{"Circuits", p.Circuits == nil},
		part{"Counter", p.Counter == nil},
		part{"Rates", p.Rates == nil},
		part{"Status", p.Status == nil},
		part{"Jobs", p.Jobs == nil},
		part{"Kept", p.Kept == nil},
		part{"Audit", p.Audit == nil},
		part{"Leases", p.Leases == nil},
		part{"Faults", p.Faults == nil},
		part{"Delivery", p.Delivery == nil},
		part{"Ready", p.Ready == nil},
		part{"Tokens", p.Tokens == nil},
		part{"Issued", p.Issued == nil},
	)
}

// OpsPages are what operators look at about Fusebox itself: the
// overview, the audit log, locks, and the probes.
type OpsPages struct {
	OpsParts
	*core

	weeks     *weekAssessor
	started   time.Time  // readiness allows the first ticks their time
	readiness *readiness // the last /readyz answer, for a second
}

// What OpsPages holds, each the few methods its handlers call.
type (
	failingCounter interface {
		Failing(ctx context.Context, cs []circuit.Circuit) (map[string]circuit.Counts, error)
	}
	hostLocks interface {
		Snapshot(ctx context.Context, app circuit.App, now time.Time) (hostinsight.Snapshot, bool)
		Break(ctx context.Context, app circuit.App, blob string) error
	}
	faultLister interface {
		List() []fault.Row
	}
	leaseLister interface {
		List(context.Context) ([]lease.Record, error)
		Identity() string
	}
	tokenStore interface {
		List(ctx context.Context) ([]auth.IssuedToken, error)
		Insert(ctx context.Context, t auth.IssuedToken) error
		Revoke(ctx context.Context, id string, at time.Time) error
	}
	auditLog interface {
		Append(context.Context, audit.Entry) error
		Recent(ctx context.Context, now time.Time, limit int) ([]audit.Entry, error)
	}
)
