package apiwire

import "time"

// Job is a scheduled job as the API answers it.
type Job struct {
	ID                 string     `json:"id"`
	Team               string     `json:"team,omitempty"` // a job of no app: its own team
	Name               string     `json:"name"`
	Slug               string     `json:"slug,omitempty"`
	App                string     `json:"app,omitempty"`
	Function           string     `json:"function,omitempty"`
	Schedule           string     `json:"schedule"`
	TimeZone           string     `json:"time_zone"`
	GraceSeconds       int        `json:"grace_seconds"`
	MaxDurationSeconds int        `json:"max_duration_seconds"`
	MinDurationSeconds int        `json:"min_duration_seconds"`
	FailAfter          int        `json:"fail_after"`
	RecoverAfter       int        `json:"recover_after"`
	Rules              string     `json:"rules"`
	Recipients         []string   `json:"recipients"`
	Channels           []string   `json:"channels"`
	Tags               []string   `json:"tags"`
	Misfire            string     `json:"misfire,omitempty"`
	Paused             bool       `json:"paused"`
	Status             string     `json:"status"`
	LastRunAt          *time.Time `json:"last_run_at,omitempty"`
	NextRunAt          *time.Time `json:"next_run_at,omitempty"`
	Success7d          *float64   `json:"success_7d,omitempty"`
	ExtraRuns          int64      `json:"extra_runs"`
	PingURL            string     `json:"ping_url"`
	Gaps               []Gap      `json:"gaps,omitempty"`
}

// Gap is one slot of a job's that went missed or failed.
type Gap struct {
	At     time.Time `json:"at"`
	Status string    `json:"status"`
}

// JobInput is a job's settings as people and scripts send them.
type JobInput struct {
	// Team owns a job of no app (one of an app follows the app's).
	Team        string `json:"team,omitempty"`
	Name        string `json:"name"`
	Slug        string `json:"slug"`
	App         string `json:"app"`
	Function    string `json:"function"`
	Schedule    string `json:"schedule"`
	TimeZone    string `json:"time_zone"`
	Grace       string `json:"grace"`        // a duration such as "5m"
	MaxDuration string `json:"max_duration"` // "" for no limit
	MinDuration string `json:"min_duration"` // "" for no limit
	// FailAfter and RecoverAfter are consecutive runs (absent: 1).
	FailAfter    *int     `json:"fail_after,omitempty"`
	RecoverAfter *int     `json:"recover_after,omitempty"`
	Recipients   []string `json:"recipients"`
	Channels     []string `json:"channels"`
	Tags         []string `json:"tags"`
	Misfire      string   `json:"misfire"` // "", once or each
	Paused       bool     `json:"paused"`
}
