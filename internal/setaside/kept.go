package setaside

import "time"

// Run is a requeue or delete of an app's set-aside messages, running in the
// background or done: who asked, why, and how far it got.
type Run struct {
	Queue   string
	To      string // "" deleted them
	Total   int    // how many it was asked to take
	Moved   int
	Doubled int
	// UpdatedAt moves after every batch; a run not updated for a while
	// while not ended died with its instance (what it had taken comes back
	// to the queue by itself).
	StartedAt, UpdatedAt, EndedAt time.Time
	By, Reason, Error             string
}

// Kept is a set-aside queue as last seen.
type Kept struct {
	Queue
	Watch
}

// AppSetAside is what was last seen of one app's set-aside queues.
type AppSetAside struct {
	AppID  string
	Queues []Kept
	// Problem says why the last look at the app's queues failed (Fusebox's
	// words, never the server's), and ProblemAt when; empty after a look
	// that worked.
	Problem   string
	ProblemAt time.Time
	// Runs are the latest send-back run of each queue, by queue.
	Runs map[string]Run
}
