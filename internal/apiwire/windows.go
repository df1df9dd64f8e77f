package apiwire

import "time"

// Window is a maintenance window as the API answers it.
type Window struct {
	ID        string    `json:"id"`
	App       string    `json:"app,omitempty"`
	From      time.Time `json:"from"`
	Until     time.Time `json:"until"`
	Reason    string    `json:"reason"`
	CreatedBy string    `json:"created_by"`
	State     string    `json:"state"`
	// A recurring window opens at each slot of Recurs in TimeZone for
	// DurationSeconds; Next are its coming openings.
	Recurs          string      `json:"recurs,omitempty"`
	TimeZone        string      `json:"time_zone,omitempty"`
	DurationSeconds int         `json:"duration_seconds,omitempty"`
	Next            []time.Time `json:"next,omitempty"`
}

// WindowInput is a maintenance window as a deploy pipeline or a manifest
// sends it: from defaults to now, and a duration may stand for until.
type WindowInput struct {
	App      string    `json:"app,omitempty"`
	From     time.Time `json:"from"`
	Until    time.Time `json:"until"`
	Duration string    `json:"duration,omitempty"`
	Reason   string    `json:"reason"`
	Recurs   string    `json:"recurs,omitempty"`
	TimeZone string    `json:"time_zone,omitempty"`
}
