package apiwire

import "time"

// A downstream in the API (docs/openapi.yaml).

// Downstream is a shared dependency, its members and where it stands.
type Downstream struct {
	Name       string           `json:"name"`
	Team       string           `json:"team,omitempty"`
	Members    []string         `json:"members"`
	Quorum     int              `json:"quorum"`
	AlertRules []DownstreamRule `json:"alert_rules"`
	Probe      *DownstreamProbe `json:"probe,omitempty"`
	Channels   []string         `json:"channels"`
	Recipients []string         `json:"recipients"`
	Note       string           `json:"note,omitempty"`
	// PauseWindows are planned pauses of every member (docs/pauses.md).
	PauseWindows []string `json:"pause_windows"`
	// Read only: where it stands.
	State      string        `json:"state"`
	Episode    int64         `json:"episode"`
	ChangedAt  *time.Time    `json:"changed_at,omitempty"`
	Reason     string        `json:"reason,omitempty"`
	Actor      string        `json:"actor,omitempty"`
	InARow     int           `json:"probe_good_in_a_row"`
	PauseUntil *time.Time    `json:"pause_until,omitempty"`
	Answers    []ProbeAnswer `json:"probe_answers"`
}

// DownstreamRule is an alert rule it names and what it does.
type DownstreamRule struct {
	ID     string `json:"id"`
	Action string `json:"action"`
}

// DownstreamProbe is its health probe.
type DownstreamProbe struct {
	URL          string `json:"url"`
	Good         int    `json:"good,omitempty"`
	EverySeconds int    `json:"every_seconds,omitempty"`
}

// ProbeAnswer is one probe call.
type ProbeAnswer struct {
	At     time.Time `json:"at"`
	Good   bool      `json:"good"`
	Said   string    `json:"said"`
	TookMS int64     `json:"took_ms"`
}

// DownstreamAction is what trip and resume take.
type DownstreamAction struct {
	Reason string `json:"reason"`
}

// DownstreamActed is what an action answers: the downstream, and each
// member it changed or could not.
type DownstreamActed struct {
	Downstream Downstream    `json:"downstream"`
	Members    []MemberActed `json:"members"`
}

// MemberActed is one member an action reached.
type MemberActed struct {
	Circuit string `json:"circuit"`
	Changed bool   `json:"changed"`
	Problem string `json:"problem,omitempty"`
}
