package apiwire

import "time"

// Channel is a channel as the API shows it: never its URL or secret,
// except the secret once, in the answer that made it.
type Channel struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	Kind      string    `json:"kind"`
	Addresses []string  `json:"addresses,omitempty"`
	URL       string    `json:"url,omitempty"` // masked: scheme and host
	Secret    string    `json:"secret,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	Team      string    `json:"team,omitempty"` // empty: shared between teams
}

// ChannelInput is what a form or the API says of a channel.
type ChannelInput struct {
	ID        string   `json:"id"`
	Name      string   `json:"name"`
	Kind      string   `json:"kind"`
	Addresses []string `json:"addresses,omitempty"`
	URL       string   `json:"url,omitempty"`    // empty on an edit: keep the stored one
	Key       string   `json:"key,omitempty"`    // pagerduty, opsgenie: the integration key; empty on an edit: keep it
	Rotate    bool     `json:"rotate,omitempty"` // webhook: make a new signing secret
	// Team owns the channel; empty: shared between teams (admins'). A
	// team's operator creating one with none names their only team.
	Team string `json:"team,omitempty"`
}
