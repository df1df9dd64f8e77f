package views

import "time"

// Outbox is the model of the mail page.
type Outbox struct {
	Page
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
	To        string
	State     string
	Tone      string
	Attempts  int
	LastError string
	CreatedAt time.Time
	SentAt    time.Time
}
