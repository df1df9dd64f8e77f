// Package audit describes the record of who did what in Fusebox: sign-ins,
// trips, resumes and every other operator action.
package audit

import "time"

// Entry is one recorded action.
type Entry struct {
	At     time.Time
	Actor  string // who: a signed-in name, "system", or a mail recipient
	Action string // what, as a short verb phrase: "signed in", "tripped"
	Target string // on what: a circuit id, a job id; may be empty
	Detail string // free text for people
	// Job names the job an entry is about by its id (Target names it in
	// words, which anyone may choose), so its team is found by id.
	Job string
	// Team owns the entry's subject when it was written ("": Fusebox's
	// own, or apps of no team); Owned says it was recorded (entries from
	// before teams were recorded are found by their target).
	Team  string
	Owned bool
}
