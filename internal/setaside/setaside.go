// Package setaside knows the queues where a function app sets work aside
// so that the rest can go on: the Functions host's poison queues (a queue
// trigger moves a message that failed maxDequeueCount times to
// "<queue>-poison", the blob trigger to "webjobs-blobtrigger-poison"), and
// parking queues an app's own code fills with events it gave up on (named
// in a circuit's settings). It says which queue is which, where its
// messages came from, and how a message's body reads to a person. It
// knows nothing of HTTP or storage.
package setaside

import (
	"encoding/base64"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Kind is why a queue holds set-aside work.
type Kind string

// The kinds of set-aside queues.
const (
	Poison     Kind = "poison"      // <queue>-poison: the queue trigger gave up on these
	BlobPoison Kind = "blob-poison" // webjobs-blobtrigger-poison: the blob trigger gave up on these
	Parking    Kind = "parking"     // named in a circuit: the app's code parked these
)

// BlobPoisonQueue is where the blob trigger puts blobs it gave up on.
const BlobPoisonQueue = "webjobs-blobtrigger-poison"

const poisonSuffix = "-poison"

// Queue is a set-aside queue as Fusebox understands it.
type Queue struct {
	Name string
	Kind Kind
	// Source is the queue its messages came from and go back to: "orders"
	// for "orders-poison"; "" when there is none to name (blob poison,
	// parking).
	Source string
	// Function is the function whose work it holds, when known: a parking
	// queue's circuit; for a poison queue, the function its source queue
	// triggers, when the caller knows it.
	Function string
}

// Classify says whether the queue name holds set-aside work and which
// kind. parking maps the parking queues named in circuits to their
// functions; it is asked first, so a parking queue named like a poison
// queue is the circuit's.
func Classify(name string, parking map[string]string) (Queue, bool) {
	if !ValidQueueName(name) {
		return Queue{}, false
	}
	if fn, ok := parking[name]; ok {
		return Queue{Name: name, Kind: Parking, Function: fn}, true
	}
	if name == BlobPoisonQueue {
		return Queue{Name: name, Kind: BlobPoison}, true
	}
	if source, ok := strings.CutSuffix(name, poisonSuffix); ok && ValidQueueName(source) {
		return Queue{Name: name, Kind: Poison, Source: source}, true
	}
	return Queue{}, false
}

// ValidQueueName is Azure's rule for queue names: 3 to 63 lowercase
// letters, digits and single hyphens, starting and ending with a letter or
// digit.
func ValidQueueName(name string) bool {
	if len(name) < 3 || len(name) > 63 {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		case c == '-':
			if i == 0 || i == len(name)-1 || name[i-1] == '-' {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// Body is a message body as a person reads it.
type Body struct {
	Text    string // safe to show as text: valid UTF-8, control characters shown as U+FFFD, at most the limit
	Decoded bool   // the stored body was base64, as the Functions queue extension writes by default
	Cut     bool   // Text is shorter than the body
}

// Read turns a stored message body into text for a person, at most limit
// runes (0: no limit). A body that is base64 of valid UTF-8 (the Functions
// queue extension's default encoding) is shown decoded; anything else as
// it is. Bytes that are not UTF-8 and control characters other than line
// breaks and tabs are shown as U+FFFD: a body is data from others, never
// markup or terminal control.
func Read(raw string, limit int) Body {
	b := Body{Text: raw}
	if dec, err := base64.StdEncoding.DecodeString(raw); err == nil && len(raw) > 0 && utf8.Valid(dec) {
		b.Text, b.Decoded = string(dec), true
	}
	var out strings.Builder
	n := 0
	for _, r := range strings.ToValidUTF8(b.Text, "\uFFFD") {
		if limit > 0 && n == limit {
			b.Cut = true
			break
		}
		if unicode.IsControl(r) && r != '\n' && r != '\t' && r != '\r' {
			r = '\uFFFD'
		}
		out.WriteRune(r)
		n++
	}
	b.Text = out.String()
	return b
}

// Owners says whose work a queue holds, as the circuits' settings name
// them: a parking queue's function, and the function a queue triggers
// (whose poison queue is "<queue>-poison").
type Owners struct {
	Parking  map[string]string // parking queue → function
	Triggers map[string]string // trigger queue → function
}

// Classify is Classify with the owners' parking queues, naming a poison
// queue's function when its source queue triggers one.
func (o Owners) Classify(name string) (Queue, bool) {
	q, ok := Classify(name, o.Parking)
	if ok && q.Kind == Poison {
		q.Function = o.Triggers[q.Source]
	}
	return q, ok
}
