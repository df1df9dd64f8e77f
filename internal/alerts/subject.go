package alerts

import "strings"

// About is the kind of thing a message is about.
type About int

const (
	AboutCircuit    About = iota // Message.Circuit is "app/function"
	AboutJob                     // "job:<id>"
	AboutSetAside                // "queue:<app>/<queue>"
	AboutDownstream              // "downstream:<name>"
)

// Subject is what a message is about, read once from the subject the
// outbox keeps (Message.Circuit), so delivery and wording switch on a kind
// instead of each looking at a prefix.
type Subject struct {
	About About
	ID    string // the circuit's app/function, the job's id, or app/queue
}

// Subject reads what m is about.
func (m Message) Subject() Subject {
	if id, ok := strings.CutPrefix(m.Circuit, JobPrefix); ok {
		return Subject{About: AboutJob, ID: id}
	}
	if id, ok := strings.CutPrefix(m.Circuit, SetAsidePrefix); ok {
		return Subject{About: AboutSetAside, ID: id}
	}
	if id, ok := strings.CutPrefix(m.Circuit, DownstreamPrefix); ok {
		return Subject{About: AboutDownstream, ID: id}
	}
	return Subject{About: AboutCircuit, ID: m.Circuit}
}

// JobSubject is the outbox subject of a job.
func JobSubject(jobID string) string { return JobPrefix + jobID }
