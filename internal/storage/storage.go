// Package storage keeps Fusebox's records in Azure Table Storage: one
// repository per table, each mapping its rows to domain types. Row layouts
// are a contract with other writers and are described in docs/storage.md.
//
// Rows are validated when read: a row another program wrote with a bad value
// is reported with its key, never silently turned into a zero value.
package storage

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/fusebox/fusebox/internal/jobs"
	"github.com/fusebox/fusebox/internal/sealed"
	"github.com/fusebox/fusebox/internal/tablestore"
)

// Logical table names; the configured prefix is put in front of each.
const (
	TableSchema      = "Schema"
	TableSessions    = "Sessions"
	TableApps        = "Apps"
	TableCircuits    = "Circuits"
	TableJobs        = "Jobs"
	TableAudit       = "Audit"
	TableFailures    = "Failures"
	TableStatus      = "Status"
	TableRates       = "Rates"
	TableOutbox      = "Outbox"
	TableRuns        = "Runs"
	TableChannels    = "Channels"
	TableHostSamples = "HostSamples"
	TableArrivals    = "Arrivals"
	TableSetAside    = "SetAside"
	TableReplays     = "Replays"
	TableTokens      = "Tokens"
	TableTeams       = "Teams"
	TableAlerts      = "Alerts"
	TableDownstreams = "Downstreams"
	TableProbes      = "Probes"
	// TableLeases is created at start-up rather than by a migration,
	// because migrations themselves run under a lease.
	TableLeases = "Leases"
)

// Store groups the repositories over one storage account.
type Store struct {
	Service  *tablestore.Service
	Sessions *Sessions
	Apps     *Apps
	Circuits *Circuits
	Jobs     *Jobs
	Audit    *Audit
	Leases   *Leases
	Failures *Failures
	Status   *Status
	Rates    *Rates
	Outbox   *Outbox
	Runs     *Runs
	Channels *Channels
	// HostSamples are the hosts' learned concurrency over time.
	HostSamples *HostSamples
	Arrivals    *Arrivals
	// SetAside is what was last seen of apps' poison and parking queues.
	SetAside *SetAside
	// Replays keep checkpoint positions over time and episodes' replays.
	Replays *Replays
	// Tokens are the API tokens people issued.
	Tokens *Tokens
	// Teams are the teams defined on the Teams page.
	Teams *Teams
	// Alerts are what Azure Monitor's action groups posted.
	Alerts *Alerts
	// Downstreams are the dependencies named with their member circuits.
	Downstreams *Downstreams
	// Probes are what circuits' health probes heard.
	Probes *Probes
	// Faults lists the rows any repository could not read.
	Faults *Faults
	// RunBound is what this instance let through of each job's runs per
	// slot (jobs.MaxRunsPerSlot): shared by pings and invocations.
	RunBound *jobs.SlotBound
}

// New builds the repositories. It does not touch the network.
func New(svc *tablestore.Service) *Store {
	faults := newFaults()
	st := &Store{
		RunBound:    &jobs.SlotBound{},
		Faults:      faults,
		Service:     svc,
		Sessions:    &Sessions{table: svc.Table(TableSessions)},
		Apps:        &Apps{table: svc.Table(TableApps), faults: faults},
		Circuits:    &Circuits{table: svc.Table(TableCircuits), faults: faults},
		Jobs:        &Jobs{table: svc.Table(TableJobs), faults: faults},
		Audit:       &Audit{table: svc.Table(TableAudit), faults: faults},
		Leases:      &Leases{table: svc.Table(TableLeases)},
		Failures:    &Failures{table: svc.Table(TableFailures)},
		Status:      &Status{table: svc.Table(TableStatus)},
		Rates:       &Rates{table: svc.Table(TableRates)},
		Outbox:      &Outbox{table: svc.Table(TableOutbox), faults: faults},
		Runs:        &Runs{table: svc.Table(TableRuns), faults: faults},
		Channels:    &Channels{table: svc.Table(TableChannels), faults: faults},
		HostSamples: &HostSamples{table: svc.Table(TableHostSamples)},
		Arrivals:    &Arrivals{table: svc.Table(TableArrivals), faults: faults},
		SetAside:    &SetAside{table: svc.Table(TableSetAside), faults: faults},
		Replays:     &Replays{table: svc.Table(TableReplays), faults: faults},
		Tokens:      &Tokens{table: svc.Table(TableTokens), faults: faults},
		Teams:       &Teams{table: svc.Table(TableTeams), faults: faults},
		Alerts:      &Alerts{table: svc.Table(TableAlerts), faults: faults},
		Downstreams: &Downstreams{table: svc.Table(TableDownstreams), faults: faults},
		Probes:      &Probes{table: svc.Table(TableProbes), faults: faults},
	}
	st.Audit.owner = st.auditOwner
	return st
}

// UseSecrets seals the secrets of apps and channels with box from now on
// (nil: stores them as given). Rows written before are opened as they are;
// Reseal them.
func (s *Store) UseSecrets(box *sealed.Box) {
	s.Apps.box, s.Channels.box, s.Jobs.box = box, box, box
}

// commaList splits a comma-separated list, dropping empty items.
func commaList(s string) []string {
	var out []string
	for _, a := range strings.Split(s, ",") {
		if a = strings.TrimSpace(a); a != "" {
			out = append(out, a)
		}
	}
	return out
}

// unixList reads comma-separated Unix seconds.
func unixList(s string) ([]time.Time, error) {
	var out []time.Time
	for _, f := range commaList(s) {
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("%q is not a Unix time", f)
		}
		out = append(out, time.Unix(n, 0).UTC())
	}
	return out, nil
}

func joinUnix(ts []time.Time) string {
	parts := make([]string, len(ts))
	for i, t := range ts {
		parts[i] = strconv.FormatInt(t.Unix(), 10)
	}
	return strings.Join(parts, ",")
}
