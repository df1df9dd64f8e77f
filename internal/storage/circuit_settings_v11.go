package storage

import (
	"strings"
	"time"

	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/pushback"
)

// This file is frozen: it reads the row shape of schema version 11, and a
// new setting never appears here.

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
