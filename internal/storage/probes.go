package storage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/tablestore"
)

// Probes keeps what each circuit's health probe heard in its episode
// (circuit.ProbeRecord), beside the circuit rather than in it: the
// evaluator writes circuit rows every tick, the keeper writes these.
type Probes struct {
	table  *tablestore.Table
	faults *Faults
}

type probeRow struct {
	tablestore.Meta // PartitionKey: app id; RowKey: function
	Episode         int64
	Resolved        bool
	Reason          string
	Answers         string // JSON, as a downstream's
	InARow          int32
}

// maxProbeRows bounds the rows a pass reads: one per circuit with a probe.
const maxProbeRows = 2000

func (r probeRow) record() (circuit.ProbeRecord, error) {
	rec := circuit.ProbeRecord{Episode: r.Episode, Resolved: r.Resolved, Reason: truncate(r.Reason, 300), InARow: int(r.InARow)}
	if len(r.Answers) > maxDownstreamColumn {
		return circuit.ProbeRecord{}, fmt.Errorf("the answers are more than %d bytes", maxDownstreamColumn)
	}
	if r.Answers != "" {
		var as []answerJSON
		if err := json.Unmarshal([]byte(r.Answers), &as); err != nil {
			return circuit.ProbeRecord{}, errors.New("the answers do not read")
		}
		for _, a := range as[max(0, len(as)-circuit.MaxProbeAnswers):] {
			rec.Answers = append(rec.Answers, circuit.ProbeAnswer{At: a.At, Good: a.Good, Said: truncate(a.Said, 100), Took: time.Duration(a.Took) * time.Millisecond})
		}
	}
	if rec.InARow < 0 || rec.InARow > len(rec.Answers) {
		return circuit.ProbeRecord{}, fmt.Errorf("%d good answers in a row of %d kept", rec.InARow, len(rec.Answers))
	}
	return rec, nil
}

// All reads every circuit's record, by circuit id, at most maxProbeRows;
// a row that does not read is skipped and listed: its circuit's probe
// starts over.
func (p *Probes) All(ctx context.Context) (map[string]circuit.ProbeRecord, error) {
	type keyed struct {
		id  string
		rec circuit.ProbeRecord
	}
	rows, faults, err := readRowsUpTo(ctx, p.table, tablestore.Query{}, TableProbes, maxProbeRows, func(row probeRow) (keyed, error) {
		rec, err := row.record()
		if err != nil {
			return keyed{}, fmt.Errorf("%w: the circuit's probe starts over", err)
		}
		return keyed{row.PartitionKey + "/" + row.RowKey, rec}, nil
	})
	if err != nil {
		return nil, fmt.Errorf("storage: probes: %w", err)
	}
	p.faults.Replace(TableProbes, faults)
	out := make(map[string]circuit.ProbeRecord, len(rows))
	for _, r := range rows {
		out[r.id] = r.rec
	}
	return out, nil
}

// Get reads one circuit's record; none when there is none or it does not
// read.
func (p *Probes) Get(ctx context.Context, appID, function string) (circuit.ProbeRecord, error) {
	var row probeRow
	if err := p.table.Get(ctx, appID, function, &row); err != nil {
		if errors.Is(err, tablestore.ErrNotFound) {
			return circuit.ProbeRecord{}, nil
		}
		return circuit.ProbeRecord{}, fmt.Errorf("storage: probe of %s/%s: %w", appID, function, err)
	}
	rec, err := row.record()
	if err != nil {
		return circuit.ProbeRecord{}, nil // starts over, as All says
	}
	return rec, nil
}

// Put stores a circuit's record.
func (p *Probes) Put(ctx context.Context, appID, function string, rec circuit.ProbeRecord) error {
	as := make([]answerJSON, 0, len(rec.Answers))
	for _, a := range rec.Answers {
		as = append(as, answerJSON{At: a.At, Good: a.Good, Said: a.Said, Took: a.Took.Milliseconds()})
	}
	answers, err := json.Marshal(as)
	if err != nil {
		return err
	}
	row := &probeRow{Meta: tablestore.Meta{PartitionKey: appID, RowKey: function}, Episode: rec.Episode, Resolved: rec.Resolved,
		Reason: truncate(rec.Reason, 300), Answers: string(answers), InARow: int32(rec.InARow)}
	if err := p.table.Upsert(ctx, row); err != nil {
		return fmt.Errorf("storage: probe of %s/%s: %w", appID, function, err)
	}
	return nil
}
