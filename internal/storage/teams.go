package storage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/fusebox/fusebox/internal/auth"
	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/tablestore"
	"github.com/fusebox/fusebox/internal/teams"
)

// Teams keeps the teams admins define on the Teams page, all in one
// partition: there are few, and every request's scope reads them all
// (through teams.Directory, at most every teams.TTL).
type Teams struct {
	table  *tablestore.Table
	faults *Faults
}

const teamPartition = "team"

type teamRow struct {
	tablestore.Meta        // PartitionKey: "team"; RowKey: the team's name
	Members         string // JSON: [{"who":…,"role":"viewer"|"operator"}]
	Channels        string // comma-separated channel ids
	Scopes          string // where in Azure its apps may live: ARM ids, one a line
}

type memberJSON struct {
	Who  string `json:"who"`
	Role string `json:"role"`
}

// maxTeamRow bounds a row read: MaxMembers members of MaxWho bytes fit.
const maxTeamRow = 128 << 10

func (r teamRow) team() (teams.Team, error) {
	if !teams.ValidName(r.RowKey) {
		return teams.Team{}, fmt.Errorf("storage: team %q: not a team's name", r.RowKey)
	}
	if len(r.Members) > maxTeamRow {
		return teams.Team{}, fmt.Errorf("storage: team %s: Members is %d bytes, more than %d", r.RowKey, len(r.Members), maxTeamRow)
	}
	var ms []memberJSON
	if r.Members != "" {
		if err := json.Unmarshal([]byte(r.Members), &ms); err != nil {
			return teams.Team{}, fmt.Errorf("storage: team %s: Members does not read: %w", r.RowKey, err)
		}
	}
	t := teams.Team{Name: r.RowKey, Channels: commaList(r.Channels)}
	for _, m := range ms {
		role, err := auth.ParseRole(m.Role)
		if err != nil {
			return teams.Team{}, fmt.Errorf("storage: team %s: member %q: %w", r.RowKey, m.Who, err)
		}
		t.Members = append(t.Members, teams.Member{Who: m.Who, Role: role})
	}
	if problems := t.Check(); len(problems) > 0 {
		return teams.Team{}, fmt.Errorf("storage: team %s: %s", r.RowKey, strings.Join(values(problems), "; "))
	}
	return t, nil
}

func values(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k, v := range m {
		out = append(out, k+" "+v)
	}
	return out
}

// List reads every team, at most teams.MaxTeams; a row that does not read
// is skipped and listed among the rows skipped: its members gain nothing.
func (t *Teams) List(ctx context.Context) ([]teams.Team, error) {
	var out []teams.Team
	var faults []Fault
	for row, err := range tablestore.Rows[teamRow](ctx, t.table, tablestore.Query{Filter: tablestore.PartitionIs(teamPartition)}) {
		var rowErr *tablestore.RowError
		if errors.As(err, &rowErr) {
			faults = append(faults, Fault{Table: TableTeams, Key: rowErr.PartitionKey + "/" + rowErr.RowKey, Problem: rowErr.Err.Error(), Seen: time.Now()})
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("storage: teams: %w", err)
		}
		tm, err := row.team()
		if err != nil {
			faults = append(faults, Fault{Table: TableTeams, Key: row.PartitionKey + "/" + row.RowKey, Problem: err.Error() + ": its members gain nothing", Seen: time.Now()})
			continue
		}
		// Scopes that do not read cost only the scopes (ParseScopes
		// bounds the text before reading it): the team's members keep
		// their roles, and its apps are reached by no scope until an
		// admin saves them again.
		if tm.Scopes, err = teams.ParseScopes(row.Scopes); err != nil {
			faults = append(faults, Fault{Table: TableTeams, Key: row.PartitionKey + "/" + row.RowKey, Problem: "Scopes: " + err.Error() + ": the team has no scope until they are saved again", Seen: time.Now()})
		}
		if out = append(out, tm); len(out) >= teams.MaxTeams {
			break
		}
	}
	t.faults.Replace(TableTeams, faults)
	return out, nil
}

// Put creates or replaces a team; only members not configured are stored.
func (t *Teams) Put(ctx context.Context, tm teams.Team) error {
	ms := []memberJSON{}
	for _, m := range tm.Members {
		if !m.Configured {
			ms = append(ms, memberJSON{Who: m.Who, Role: m.Role.String()})
		}
	}
	b, err := json.Marshal(ms)
	if err != nil {
		return err
	}
	row := &teamRow{Meta: tablestore.Meta{PartitionKey: teamPartition, RowKey: tm.Name}, Members: string(b), Channels: strings.Join(tm.Channels, ","), Scopes: teams.FormatScopes(tm.Scopes)}
	if err := t.table.Upsert(ctx, row); err != nil {
		return fmt.Errorf("storage: put team %s: %w", tm.Name, err)
	}
	return nil
}

// Delete removes a team; circuit.ErrNotFound when there is none.
func (t *Teams) Delete(ctx context.Context, name string) error {
	err := t.table.Delete(ctx, teamPartition, name, tablestore.AnyETag)
	if errors.Is(err, tablestore.ErrNotFound) {
		return fmt.Errorf("storage: team %s: %w", name, circuit.ErrNotFound)
	}
	return err
}
