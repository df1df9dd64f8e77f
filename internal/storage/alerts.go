package storage

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/fusebox/fusebox/internal/azalerts"
	"github.com/fusebox/fusebox/internal/tablestore"
)

// Alerts keeps what Azure Monitor's action groups posted, one row per
// alert and condition, partitioned by the month it fired: a delivery sent
// again is the same row, and a month past retention goes at once.
type Alerts struct {
	table  *tablestore.Table
	faults *Faults
}

// AlertRetention is how long a received alert is kept.
const AlertRetention = azalerts.MaxAge

// MaxAlertsRead bounds a list: the newest months' rows, at most this many.
const MaxAlertsRead = 2000

type alertRow struct {
	tablestore.Meta // PartitionKey: "2006-01" of Fired; RowKey: azalerts.Alert.Key
	AlertID         string
	RuleID          string
	Rule            string
	Severity        string
	Signal          string
	Condition       string
	Service         string
	Targets         string // one a line
	Fired           time.Time
	Resolved        time.Time
	Description     string
	Received        time.Time
	Tripped         string // comma-separated app/function: what it tripped
	Matched         string // the rule id it was matched to; empty: none
	Note            string // how it matched, or why it acted on nothing
}

func (r alertRow) alert() (azalerts.Received, error) {
	a := azalerts.Alert{ID: r.AlertID, RuleID: r.RuleID, Rule: r.Rule, Severity: r.Severity, Signal: r.Signal, Condition: r.Condition,
		Service: r.Service, Fired: r.Fired, Resolved: r.Resolved, Description: r.Description}
	if r.Targets != "" {
		a.Targets = strings.Split(r.Targets, "\n")
	}
	if a.ID == "" || (a.Condition != azalerts.Fired && a.Condition != azalerts.Resolved) || len(a.Targets) > azalerts.MaxTargets ||
		len(r.AlertID) > azalerts.MaxID || len(r.Rule) > azalerts.MaxRule || len(r.Description) > azalerts.MaxDescription || a.Fired.IsZero() {
		return azalerts.Received{}, fmt.Errorf("storage: alert %s: not a received alert's row", r.RowKey)
	}
	return azalerts.Received{Alert: a, At: r.Received, Tripped: commaList(r.Tripped), Matched: r.Matched, Note: r.Note}, nil
}

// Add stores a received alert; false when this alert in this condition
// was received already (an action group's retry), which changes nothing.
func (s *Alerts) Add(ctx context.Context, a azalerts.Alert, received time.Time) (bool, error) {
	row := &alertRow{Meta: tablestore.Meta{PartitionKey: a.Fired.UTC().Format("2006-01"), RowKey: a.Key()},
		AlertID: a.ID, RuleID: a.RuleID, Rule: a.Rule, Severity: a.Severity, Signal: a.Signal, Condition: a.Condition, Service: a.Service,
		Targets: strings.Join(a.Targets, "\n"), Fired: a.Fired.UTC(), Resolved: a.Resolved.UTC(), Description: a.Description, Received: received.UTC()}
	err := s.table.Insert(ctx, row)
	if errors.Is(err, tablestore.ErrExists) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("storage: add alert: %w", err)
	}
	return true, nil
}

// alertOutcome is the merge that records what an alert did: its columns
// (a merge writes every string of its struct).
type alertOutcome struct {
	tablestore.Meta
	Tripped, Matched, Note string
}

// SetOutcome records what a received alert did: the rule it matched, the
// circuits it acted on, and how it matched or why it acted on nothing.
func (s *Alerts) SetOutcome(ctx context.Context, a azalerts.Alert, o azalerts.Outcome) error {
	err := s.table.Merge(ctx, &alertOutcome{Meta: tablestore.Meta{PartitionKey: a.Fired.UTC().Format("2006-01"), RowKey: a.Key(), ETag: tablestore.AnyETag},
		Tripped: strings.Join(o.Acted, ","), Matched: o.Rule, Note: o.Note})
	if err != nil {
		return fmt.Errorf("storage: alert %s: record its outcome: %w", a.Key(), err)
	}
	return nil
}

// Recent lists the alerts that fired last month, this month or (by a
// clock ahead) the next, newest received first, at most MaxAlertsRead rows
// read; rows that do not read are skipped and listed.
func (s *Alerts) Recent(ctx context.Context, now time.Time) ([]azalerts.Received, error) {
	month := func(d int) tablestore.Filter {
		first := time.Date(now.UTC().Year(), now.UTC().Month(), 1, 0, 0, 0, 0, time.UTC)
		return tablestore.PartitionIs(first.AddDate(0, d, 0).Format("2006-01"))
	}
	f := tablestore.Or(month(-1), month(0), month(1))
	var out []azalerts.Received
	var faults []Fault
	read := 0
	for row, err := range tablestore.Rows[alertRow](ctx, s.table, tablestore.Query{Filter: f}) {
		if read++; read > MaxAlertsRead {
			break
		}
		var rowErr *tablestore.RowError
		if errors.As(err, &rowErr) {
			faults = append(faults, Fault{Table: TableAlerts, Key: rowErr.PartitionKey + "/" + rowErr.RowKey, Problem: rowErr.Err.Error(), Seen: time.Now()})
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("storage: alerts: %w", err)
		}
		a, err := row.alert()
		if err != nil {
			faults = append(faults, Fault{Table: TableAlerts, Key: row.PartitionKey + "/" + row.RowKey, Problem: err.Error(), Seen: time.Now()})
			continue
		}
		out = append(out, a)
	}
	s.faults.Replace(TableAlerts, faults)
	slices.SortFunc(out, func(a, b azalerts.Received) int { return b.At.Compare(a.At) })
	return out, nil
}

// DeleteBefore removes the alerts of months wholly before t.
func (s *Alerts) DeleteBefore(ctx context.Context, t time.Time) (int, error) {
	return deleteMatching(ctx, s.table, tablestore.Lt("PartitionKey", t.UTC().Format("2006-01")))
}
