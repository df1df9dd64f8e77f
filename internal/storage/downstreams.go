package storage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/downstream"
	"github.com/fusebox/fusebox/internal/tablestore"
	"github.com/fusebox/fusebox/internal/teams"
)

// Downstreams keeps the downstreams, all in one partition: there are few
// (at most downstream.MaxDownstream are read), and each pass of their
// keeper reads them all.
type Downstreams struct {
	table  *tablestore.Table
	faults *Faults
}

const downstreamPartition = "downstream"

type downstreamRow struct {
	tablestore.Meta   // PartitionKey: "downstream"; RowKey: the name
	Team              string
	Members           string // comma-separated app/function
	Quorum            int32
	Rules             string // JSON: [{"id":…,"action":"trip"|"throttle"}]
	ProbeURL          string
	ProbeGood         int32
	ProbeEverySeconds int32
	Channels          string
	Recipients        string
	Note              string
	State             string
	Episode           int64
	ChangedAt         time.Time
	Reason            string
	Actor             string
	Answers           string // JSON, the probe's last answers
	InARow            int32
	PauseWindows      string // one a line, as circuit.PauseWindow.String spells them
	PauseUntil        time.Time
}

func (*downstreamRow) ClearsTimes() {}

type ruleJSON struct {
	ID     string `json:"id"`
	Action string `json:"action"`
}

type answerJSON struct {
	At   time.Time `json:"at"`
	Good bool      `json:"good"`
	Said string    `json:"said"`
	Took int64     `json:"took_ms"`
}

// maxDownstreamColumn bounds a JSON column read: MaxAlertRules rules of
// 512 bytes, MaxProbes answers.
const maxDownstreamColumn = 16 << 10

// downstream reads the row. What costs only itself does not stop the
// downstream: a pause window or the probe's past answers that do not read
// are left out, and dropped says so (for the rows skipped, as a warning).
func (r downstreamRow) downstream() (d downstream.Downstream, dropped string, err error) {
	if len(r.Rules) > maxDownstreamColumn || len(r.Answers) > maxDownstreamColumn || len(r.PauseWindows) > maxDownstreamColumn {
		return d, "", fmt.Errorf("the Rules, Answers or PauseWindows column is more than %d bytes", maxDownstreamColumn)
	}
	st, err := downstream.ParseState(r.State)
	if err != nil {
		return d, "", err
	}
	d = downstream.Downstream{Name: r.RowKey, Team: r.Team, Members: commaList(r.Members), Quorum: int(r.Quorum),
		Probe:    downstream.Probe{URL: r.ProbeURL, Good: int(r.ProbeGood), Every: time.Duration(r.ProbeEverySeconds) * time.Second},
		Channels: commaList(r.Channels), Recipients: commaList(r.Recipients), Note: r.Note,
		State: st, Episode: r.Episode, ChangedAt: r.ChangedAt, Reason: truncate(r.Reason, downstream.MaxReason), Actor: truncate(r.Actor, 200),
		InARow: int(r.InARow), PauseUntil: r.PauseUntil, Version: string(r.ETag)}
	var lost []string
	for _, l := range commaLines(r.PauseWindows) {
		if p, err := circuit.ParsePauseWindow(l); err != nil {
			lost = append(lost, "a pause window left out: "+err.Error())
		} else if len(d.PauseWindows) < circuit.MaxPauseWindows {
			d.PauseWindows = append(d.PauseWindows, p)
		}
	}
	if r.Team != "" && !teams.ValidName(r.Team) {
		return d, "", fmt.Errorf("team %q is not a team's name", r.Team)
	}
	if r.Rules != "" {
		var rs []ruleJSON
		if err := json.Unmarshal([]byte(r.Rules), &rs); err != nil {
			return d, "", fmt.Errorf("the Rules column does not read: %w", err)
		}
		for _, x := range rs {
			d.Rules = append(d.Rules, downstream.Rule{ID: x.ID, Action: x.Action})
		}
	}
	if r.Answers != "" {
		var as []answerJSON
		if err := json.Unmarshal([]byte(r.Answers), &as); err != nil {
			lost = append(lost, "the probe's past answers left out: they do not read")
			as = nil
		}
		for _, a := range as[max(0, len(as)-downstream.MaxProbes):] {
			d.Answers = append(d.Answers, downstream.Answer{At: a.At, Good: a.Good, Said: truncate(a.Said, 100), Took: time.Duration(a.Took) * time.Millisecond})
		}
	}
	if err := d.Check(true); err != nil {
		return downstream.Downstream{}, "", err
	}
	return d, strings.Join(lost, "; "), nil
}

// commaLines are s's non-empty lines.
func commaLines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}

func downstreamRowOf(d downstream.Downstream) (*downstreamRow, error) {
	rs := make([]ruleJSON, 0, len(d.Rules))
	for _, r := range d.Rules {
		rs = append(rs, ruleJSON{ID: r.ID, Action: r.Action})
	}
	rules, err := json.Marshal(rs)
	if err != nil {
		return nil, err
	}
	as := make([]answerJSON, 0, len(d.Answers))
	for _, a := range d.Answers {
		as = append(as, answerJSON{At: a.At, Good: a.Good, Said: a.Said, Took: a.Took.Milliseconds()})
	}
	answers, err := json.Marshal(as)
	if err != nil {
		return nil, err
	}
	return &downstreamRow{Meta: tablestore.Meta{PartitionKey: downstreamPartition, RowKey: d.Name, ETag: tablestore.ETag(d.Version)},
		Team: d.Team, Members: strings.Join(d.Members, ","), Quorum: int32(d.Quorum), Rules: string(rules),
		ProbeURL: d.Probe.URL, ProbeGood: int32(d.Probe.Good), ProbeEverySeconds: int32(d.Probe.Every / time.Second),
		Channels: strings.Join(d.Channels, ","), Recipients: strings.Join(d.Recipients, ","), Note: d.Note,
		State: d.State.Word(), Episode: d.Episode, ChangedAt: d.ChangedAt, Reason: d.Reason, Actor: d.Actor,
		Answers: string(answers), InARow: int32(d.InARow), PauseWindows: strings.Join(circuit.PauseWindowLines(d.PauseWindows), "\n"), PauseUntil: d.PauseUntil}, nil
}

// List reads every downstream, by name, at most downstream.MaxDownstream;
// a row that does not read is skipped, listed among the rows skipped, and
// acts on nothing.
func (s *Downstreams) List(ctx context.Context) ([]downstream.Downstream, error) {
	var partial []Fault
	out, faults, err := readRowsUpTo(ctx, s.table, tablestore.Query{Filter: tablestore.PartitionIs(downstreamPartition)}, TableDownstreams, downstream.MaxDownstream,
		func(row downstreamRow) (downstream.Downstream, error) {
			d, dropped, err := row.downstream()
			if err != nil {
				return d, fmt.Errorf("%w: it acts on nothing until it is saved again", err)
			}
			if dropped != "" {
				partial = append(partial, Fault{Table: TableDownstreams, Key: rowKey(row), Problem: dropped + "; the downstream acts without it", Seen: time.Now()})
			}
			return d, nil
		})
	if err != nil {
		return nil, fmt.Errorf("storage: downstreams: %w", err)
	}
	s.faults.Replace(TableDownstreams, append(faults, partial...))
	slices.SortFunc(out, func(a, b downstream.Downstream) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// Get reads one downstream; downstream.ErrNotFound when there is none.
func (s *Downstreams) Get(ctx context.Context, name string) (downstream.Downstream, error) {
	var row downstreamRow
	if err := s.table.Get(ctx, downstreamPartition, name, &row); err != nil {
		if errors.Is(err, tablestore.ErrNotFound) {
			return downstream.Downstream{}, fmt.Errorf("storage: downstream %s: %w", name, downstream.ErrNotFound)
		}
		return downstream.Downstream{}, fmt.Errorf("storage: downstream %s: %w", name, err)
	}
	d, _, err := row.downstream()
	if err != nil {
		return downstream.Downstream{}, fmt.Errorf("storage: downstream %s: %w", name, err)
	}
	return d, nil
}

// Create stores a new downstream; downstream.ErrConflict when the name
// is taken.
func (s *Downstreams) Create(ctx context.Context, d downstream.Downstream) (downstream.Downstream, error) {
	d.Version = ""
	row, err := downstreamRowOf(d)
	if err != nil {
		return d, err
	}
	if err := s.table.Insert(ctx, row); err != nil {
		if errors.Is(err, tablestore.ErrExists) {
			return d, fmt.Errorf("storage: downstream %s: %w", d.Name, downstream.ErrConflict)
		}
		return d, fmt.Errorf("storage: create downstream %s: %w", d.Name, err)
	}
	d.Version = string(row.ETag)
	return d, nil
}

// Update replaces a downstream if it is still at d.Version;
// downstream.ErrConflict when it changed since, ErrNotFound when gone.
func (s *Downstreams) Update(ctx context.Context, d downstream.Downstream) (downstream.Downstream, error) {
	row, err := downstreamRowOf(d)
	if err != nil {
		return d, err
	}
	if err := s.table.Update(ctx, row); err != nil {
		switch {
		case errors.Is(err, tablestore.ErrConflict):
			return d, fmt.Errorf("storage: downstream %s: %w", d.Name, downstream.ErrConflict)
		case errors.Is(err, tablestore.ErrNotFound):
			return d, fmt.Errorf("storage: downstream %s: %w", d.Name, downstream.ErrNotFound)
		}
		return d, fmt.Errorf("storage: update downstream %s: %w", d.Name, err)
	}
	d.Version = string(row.ETag)
	return d, nil
}

// Delete removes a downstream; downstream.ErrNotFound when there is none.
func (s *Downstreams) Delete(ctx context.Context, name string) error {
	err := s.table.Delete(ctx, downstreamPartition, name, tablestore.AnyETag)
	if errors.Is(err, tablestore.ErrNotFound) {
		return fmt.Errorf("storage: downstream %s: %w", name, downstream.ErrNotFound)
	}
	return err
}
