package views

import "time"

// Outbox is the model of the Notifications page.
type Outbox struct {
	Page
	Failing []FailingRow
	Rows    []OutboxRow
	CanAct  bool
	MailOff bool
}

// OutboxRow is one message.
type OutboxRow struct {
	ID        string
	Circuit   string
	Episode   int64
	Kind      string
	Channel   string // mail, teams, slack, webhook
	To        string // the address, or the channel's name
	State     string
	Tone      string
	Attempts  int
	LastError string
	CreatedAt time.Time
	SentAt    time.Time
}
