package apiwire

// An app's registration in the API (docs/openapi.yaml).

// App is an app's registration as the API shows it: its secrets only
// as whether they are set.
type App struct {
	ID             string   `json:"id"`
	Team           string   `json:"team,omitempty"` // empty: admins' alone
	DisplayName    string   `json:"display_name,omitempty"`
	Switch         string   `json:"switch"`
	Subscription   string   `json:"subscription,omitempty"`
	ResourceGroup  string   `json:"resource_group,omitempty"`
	Site           string   `json:"site,omitempty"`
	Slot           string   `json:"slot,omitempty"`
	LocalSettings  string   `json:"local_settings,omitempty"`
	Linux          bool     `json:"linux"`
	GuardrailMax   int      `json:"guardrail_max,omitempty"`
	GuardrailShare float64  `json:"guardrail_share_percent,omitempty"`
	HostID         string   `json:"host_id,omitempty"`
	InsightsAppID  string   `json:"insights_app_id,omitempty"`
	SetAsideLimit  int      `json:"set_aside_limit,omitempty"`
	ResumeFrom     string   `json:"resume_from,omitempty"`
	Channels       []string `json:"channels"`
	EscalateTo     []string `json:"escalate_to"`
	EscalateAfter  int      `json:"escalate_after_seconds"`
	Hosting        string   `json:"hosting,omitempty"`
	HostStorageSet bool     `json:"host_storage_set"`
	EventHubsSet   bool     `json:"event_hubs_set"`
}

// AppInput is what POST and PUT take: App's settings and the two
// secrets, write-only (omitted on PUT: kept).
type AppInput struct {
	App
	HostStorage      string `json:"host_storage,omitempty"`
	EventHubs        string `json:"event_hubs,omitempty"`
	ClearHostStorage bool   `json:"clear_host_storage"`
	ClearEventHubs   bool   `json:"clear_event_hubs"`
}
