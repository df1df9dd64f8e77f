package storage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/pushback"
	"github.com/fusebox/fusebox/internal/tablestore"
)

// A circuit's settings are one column of its row, Settings, holding
// circuit.Spec as JSON: a new setting is a field of Spec and nothing here.

// maxSettingsJSON bounds the Settings column read: a row written by hand
// costs at most this much to decode. Table Storage holds 32K characters (UTF-16).
const maxSettingsJSON = 32 << 10

// settingsRow is what a change of settings merges into a circuit's row:
// one conditional write, which leaves the state as it is.
type settingsRow struct {
	tablestore.Meta
	Function string
	Settings string
}

// settingsJSON is how the Settings column spells s.
func settingsJSON(s circuit.Settings) string {
	b, err := json.Marshal(s.Spec())
	if err != nil { // a Spec is plain fields: cannot happen
		panic(fmt.Sprintf("storage: settings as JSON: %v", err))
	}
	return string(b)
}

// setSettings copies a circuit's settings into the row.
func (r *circuitRow) setSettings(c circuit.Circuit) {
	r.Function, r.Settings = c.Function, settingsJSON(c.Settings)
}

// UpdateSettings changes a circuit's settings, keeping its state: one
// merge, on condition that it is still at ci.Version.
func (c *Circuits) UpdateSettings(ctx context.Context, ci circuit.Circuit) error {
	defer c.wrote()
	row := &settingsRow{Meta: tablestore.Meta{PartitionKey: ci.AppID, RowKey: circuitKey(ci.Function), ETag: tablestore.ETag(ci.Version)},
		Function: ci.Function, Settings: settingsJSON(ci.Settings)}
	if err := c.table.Merge(ctx, row); err != nil {
		return fmt.Errorf("storage: update circuit %s: %w", ci.ID(), missingOrConflict(err, ci))
	}
	return nil
}

// settings are the row's settings, checked as anything written by others
// is: what would break counting is an error, what costs only a feature
// is left out.
func (r circuitRow) settings() (circuit.Settings, error) {
	var spec circuit.Spec
	switch {
	case len(r.Settings) > maxSettingsJSON:
		return circuit.Settings{}, fmt.Errorf("the Settings column is %d bytes, more than the %d a circuit's settings may hold", len(r.Settings), maxSettingsJSON)
	case r.Settings != "":
		if err := json.Unmarshal([]byte(r.Settings), &spec); err != nil {
			return circuit.Settings{}, fmt.Errorf("the Settings column is not a circuit's settings: %w", err)
		}
	case r.columnSettings != (columnSettings{}):
		spec = r.columnSettings.spec()
	default:
		return circuit.Settings{}, errors.New("the row holds no settings (no Settings column)")
	}
	s := spec.Settings()
	if s.Threshold < 1 || s.Window < time.Second {
		return circuit.Settings{}, fmt.Errorf("threshold %d and window %s must both be positive", s.Threshold, s.Window)
	}
	if (s.Rule.Ratio != 0 || s.Rule.MinCalls != 0) && !(s.Rule.Ratio > 0 && s.Rule.Ratio <= 1 && s.Rule.MinCalls >= 1) {
		return circuit.Settings{}, fmt.Errorf("failure ratio %v must be in (0, 1] and its minimum of calls %d at least 1", s.Rule.Ratio, s.Rule.MinCalls)
	}
	if u, n := s.Runbook.Problems(); u != "" || n != "" {
		return circuit.Settings{}, fmt.Errorf("runbook: %s", strings.TrimSpace(u+" "+n))
	}
	// Out of range (written by hand), these cost only their feature.
	if s.Throttle.Threshold < 0 || s.Throttle.Threshold > circuit.MaxThreshold {
		s.Throttle = circuit.Throttle{}
	}
	if s.Throttle.Quiet < 0 || s.Throttle.Quiet > circuit.MaxThrottleQuiet {
		s.Throttle.Quiet = 0
	}
	s.Throttle.Words = throttleWords(s.Throttle.Words)
	if s.Rule.MinInstances < 0 || s.Rule.MinInstances > circuit.MaxQuorum {
		s.Rule.MinInstances = 0
	}
	if s.HubRetention < 0 || s.HubRetention > circuit.MaxHubRetention {
		s.HubRetention = 0
	}
	return s, nil
}

// throttleWords are a row's throttle words, bounded as Validate bounds
// them: a row written by hand costs at most pushback.MaxWords words, and
// a word that could not be typed in is dropped.
func throttleWords(words []string) []string {
	var out []string
	for _, w := range words {
		if len(out) == pushback.MaxWords {
			break
		}
		if len(w) <= pushback.MaxWordBytes && pushback.Word(w) != "" {
			out = append(out, w)
		}
	}
	return out
}

// columnSettings are the columns a circuit's settings had before schema
// version 12 (which moved them into Settings). They are read, never
// written: migration 12 moves them, and a row an instance of the last
// release wrote during a rolling upgrade stays readable.
type columnSettings struct {
	Threshold          int32   `table:",readonly"`
	WindowSeconds      int32   `table:",readonly"`
	FailureRatio       float64 `table:",readonly"`
	MinCalls           int32   `table:",readonly"`
	NoSuccess          bool    `table:",readonly"`
	Recipients         string  `table:",readonly"` // comma-separated
	Channels           string  `table:",readonly"` // comma-separated
	EscalateTo         string  `table:",readonly"` // comma-separated
	EscalateSeconds    int32   `table:",readonly"`
	EventHub           string  `table:",readonly"`
	HubRetentionHours  int32   `table:",readonly"`
	MinInstances       int32   `table:",readonly"`
	ThrottleThreshold  int32   `table:",readonly"`
	ThrottleQuiet      int32   `table:",readonly"` // seconds
	ThrottleKind       string  `table:",readonly"`
	ThrottleAsk        bool    `table:",readonly"`
	ThrottleOnly429    bool    `table:",readonly"`
	ThrottleWords      string  `table:",readonly"` // one a line
	Queue              string  `table:",readonly"`
	Parking            string  `table:",readonly"`
	AutoResume         bool    `table:",readonly"`
	Shadow             bool    `table:",readonly"`
	RunbookURL         string  `table:",readonly"`
	RunbookNote        string  `table:",readonly"`
	CooldownSeconds    int32   `table:",readonly"`
	MaxCooldownSeconds int32   `table:",readonly"`
}

// spec is the settings the columns hold.
func (c columnSettings) spec() circuit.Spec {
	seconds := func(n int32) circuit.Seconds { return circuit.Seconds(time.Duration(n) * time.Second) }
	words := strings.SplitN(truncate(c.ThrottleWords, pushback.MaxWords*(pushback.MaxWordBytes+1)), "\n", pushback.MaxWords+1)
	if c.ThrottleWords == "" {
		words = nil
	}
	return circuit.Spec{Threshold: int(c.Threshold), Window: seconds(c.WindowSeconds),
		FailureRatio: c.FailureRatio, MinCalls: int(c.MinCalls), NoSuccess: c.NoSuccess, MinInstances: int(c.MinInstances),
		Recipients: commaList(c.Recipients), Channels: commaList(c.Channels), EscalateTo: commaList(c.EscalateTo), EscalateAfter: seconds(c.EscalateSeconds),
		AutoResume: c.AutoResume, Cooldown: seconds(c.CooldownSeconds), MaxCooldown: seconds(c.MaxCooldownSeconds), Shadow: c.Shadow,
		EventHub: c.EventHub, HubRetention: circuit.Hours(time.Duration(c.HubRetentionHours) * time.Hour), Queue: c.Queue, ParkingQueue: c.Parking,
		ThrottleThreshold: int(c.ThrottleThreshold), ThrottleQuiet: seconds(c.ThrottleQuiet), ThrottleKind: c.ThrottleKind,
		ThrottleAsk: c.ThrottleAsk, ThrottleOnly: c.ThrottleOnly429, ThrottleWords: words,
		RunbookURL: c.RunbookURL, RunbookNote: c.RunbookNote}
}

// keepColumnSettings gives a row read with its settings in columns (an
// instance of the last release wrote it) a Settings column, so a replace
// of it, which never writes the columns, keeps them.
func (r *circuitRow) keepColumnSettings() {
	if r.Settings == "" && r.columnSettings != (columnSettings{}) {
		r.Settings = settingsJSON(r.columnSettings.spec().Settings())
	}
}

// checkCircuitRow is a circuit row as read, checked.
func checkCircuitRow(r circuitRow) (circuitRow, error) {
	if strings.HasPrefix(r.RowKey, actuationPrefix) {
		return r, nil // an actuation row, read with the circuits: every value of it reads
	}
	r.keepColumnSettings()
	_, err := r.toCircuit(nil)
	return r, err
}

// MoveCircuitSettings is migration 12: it rewrites each circuit row that
// keeps its settings in columns with a Settings column instead (and its
// actuation, when it keeps that in columns too, in its own row first).
// Run again, it finds nothing to do. A row whose columns do not make
// readable settings is left as it is, to be shown as a bad row.
func MoveCircuitSettings(ctx context.Context, svc *tablestore.Service) error {
	return rewriteCircuitRows(ctx, svc.Table(TableCircuits), "move settings of", func(row *circuitRow) (bool, error) {
		if row.Settings != "" || row.columnSettings == (columnSettings{}) {
			return false, nil
		}
		if _, err := row.settings(); err != nil {
			return false, nil
		}
		row.Settings = settingsJSON(row.columnSettings.spec().Settings())
		return true, nil
	})
}

// rewriteCircuitRows replaces every circuit row that change changes (it
// says whether it did), each on condition that the row did not change
// since it was read (a row that changed is read again, a few times). A
// replace drops the row's read-only columns: the actuation they hold is
// moved to its own row first.
func rewriteCircuitRows(ctx context.Context, t *tablestore.Table, what string, change func(*circuitRow) (bool, error)) error {
	q := tablestore.Query{Filter: tablestore.RowKeyPrefix(circuitPrefix)}
	for row, err := range tablestore.Rows[circuitRow](ctx, t, q) {
		if err != nil {
			var bad *tablestore.RowError
			if errors.As(err, &bad) {
				continue // unreadable to any release; shown as a bad row
			}
			return fmt.Errorf("storage: %s circuits: %w", what, err)
		}
		for attempt := 0; ; attempt++ {
			changed, err := change(&row)
			if err != nil || !changed {
				break
			}
			if err = keepActuation(ctx, t, row); err == nil {
				err = t.Update(ctx, &row) // a replace: the old columns go
			}
			if err == nil || attempt == 4 || !errors.Is(err, tablestore.ErrConflict) {
				if err != nil {
					return fmt.Errorf("storage: %s circuit %s/%s: %w", what, row.PartitionKey, row.RowKey, err)
				}
				break
			}
			pk, rk := row.PartitionKey, row.RowKey
			row = circuitRow{}
			if err := t.Get(ctx, pk, rk, &row); errors.Is(err, tablestore.ErrNotFound) {
				break // deleted meanwhile
			} else if err != nil {
				return fmt.Errorf("storage: %s circuit %s/%s: %w", what, pk, rk, err)
			}
		}
	}
	return nil
}

// keepActuation writes the actuation a circuit row keeps in its old
// columns as the circuit's actuation row, unless one exists (written by
// this release's switch: newer).
func keepActuation(ctx context.Context, t *tablestore.Table, row circuitRow) error {
	if row.legacyActuation == (legacyActuation{}) {
		return nil
	}
	a := asActuation(row)
	a.Meta = tablestore.Meta{PartitionKey: row.PartitionKey, RowKey: actuationKey(strings.TrimPrefix(row.RowKey, circuitPrefix))}
	a.FenceLease, a.FenceGeneration = "", 0
	if err := t.Insert(ctx, a); err != nil && !errors.Is(err, tablestore.ErrExists) {
		return err
	}
	return nil
}

// MoveCircuitActuation is migration 13: each circuit row that keeps its
// actuation (applied episode, switch errors, confirmation, drift) in
// columns has it moved to the circuit's actuation row, and loses the
// columns. Run again, it finds nothing to do.
func MoveCircuitActuation(ctx context.Context, svc *tablestore.Service) error {
	return rewriteCircuitRows(ctx, svc.Table(TableCircuits), "move actuation of", func(row *circuitRow) (bool, error) {
		return row.legacyActuation != (legacyActuation{}), nil
	})
}
