// Package otlp turns what an Azure Functions host exports over
// OpenTelemetry into invocations the breaker counts: which spans and log
// records are invocations, which function each names, whether it failed,
// and which of them were already counted (the host may send an invocation
// as a span and as a log record, and an exporter retries a batch whole).
//
// It knows the OTLP messages (go.opentelemetry.io/proto/otlp) but nothing
// of HTTP, gRPC or storage: the web layer decodes a request into Mapped,
// Seen judges which of its invocations count, and ingest.Exports keeps
// them as failure rows, the way it keeps every other report.
package otlp

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"strings"
	"time"

	"github.com/fusebox/fusebox/internal/trigger"
)

// Source is the OTLP signal an invocation came from.
type Source string

const (
	Traces Source = "traces"
	Logs   Source = "logs"
)

// Signal is which of the records a host and its worker export told of an
// invocation. The same run may come as the host's span, the worker's span
// and the host's "Executed …" record; per function, the first of them in
// this order that arrives at all is the one counted (Seen.Judge):
// the host's span covers every invocation whatever the log level, the
// worker's covers it when the host sends no spans, and the record counts
// functions no span tells of.
type Signal int

const (
	HostSpan Signal = iota
	WorkerSpan
	ExecutedRecord
	// SpansMissFailures is no signal but what was learnt of a function:
	// its spans said an invocation succeeded that its Executed record says
	// failed (hosts built before September 2025 set no ERROR status), so
	// its records count it and its spans do not.
	SpansMissFailures
	// RecordsShowSuccesses is no signal either: a succeeded Executed record
	// of the function arrived, so its records are not filtered to failures
	// by a log level, and a ratio can be judged on them.
	RecordsShowSuccesses
)

func (s Signal) String() string {
	switch s {
	case HostSpan:
		return "host span"
	case WorkerSpan:
		return "worker span"
	case SpansMissFailures:
		return "spans that miss failures"
	case RecordsShowSuccesses:
		return "Executed records of successes"
	}
	return "Executed record"
}

// Invocation is one run of one function, as one signal told it.
type Invocation struct {
	Function string
	// ID is the host's invocation id when the record carries one, else
	// "span:" and the span id: what makes two records the same run.
	ID       string
	At       time.Time // when it ended
	Start    time.Time // when it began; zero when the record does not say
	Failed   bool
	Instance string // faas.instance, else the resource's service.instance.id
	Sample   string // for a failure: the span's status message, cut
	// Trace is, for a failed span, its W3C traceparent (its own trace
	// and span ids): the request Application Insights keeps of the run.
	Trace  string
	Signal Signal

	seen seenKey // its key in Seen, once Judge has computed it
}

// MaxID bounds an invocation id: the host's are GUIDs (36 bytes). A longer
// one is refused, never remembered.
const MaxID = 64

// MaxInstance bounds the instance name kept with an invocation.
const MaxInstance = 64

// MaxSample bounds a failure's error text kept with an invocation.
const MaxSample = 300

// validID says whether s can be an invocation id: 1 to MaxID bytes of
// letters, digits and "-_.:". An older WebJobs SDK wrote the trigger's
// reason ("New queue message detected…") into faas.execution: not an id.
func validID(s string) bool {
	if s == "" || len(s) > MaxID {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '-' || c == '_' || c == '.' || c == ':') {
			return false
		}
	}
	return true
}

// Mapped is what one export said.
type Mapped struct {
	Source Source
	// Records is how many spans or log records the export held.
	Records     int
	Invocations []Invocation
	// Unattributed counts invocation records that name no function Fusebox
	// could trust, by why; they are shown, never guessed.
	Unattributed map[string]int
	// ServiceNames are the resources' service.name values (the site name,
	// as the host sets it), for the app page to compare with the app.
	ServiceNames []string
	// Dependencies are the failed calls among the spans that are no
	// invocation: at most MaxDependencies.
	Dependencies []Dependency
}

// add keeps what one record was: no invocation (ok false), one that names
// no function (why), or an invocation, on the resource's instance unless
// it names its own.
func (m *Mapped) add(inv Invocation, why string, ok bool, instance string) {
	switch {
	case !ok:
	case why != "":
		m.unattributed(why)
	default:
		if inv.Instance == "" {
			inv.Instance = instance
		}
		inv.Instance = cut(inv.Instance, MaxInstance)
		m.Invocations = append(m.Invocations, inv)
	}
}

// Key names what the export counts: the same invocations give the same
// key, whether an exporter sent the export again, over gRPC or HTTP,
// as protobuf or JSON. Rows written under it are replaced, not added to,
// when the same invocations come again.
func (m *Mapped) Key() string {
	h := sha256.New()
	var buf [8]byte
	_, _ = h.Write([]byte(m.Source))
	for _, inv := range m.Invocations {
		binary.BigEndian.PutUint64(buf[:], uint64(inv.At.UnixNano()))
		_, _ = h.Write(buf[:])
		failed := "0"
		if inv.Failed {
			failed = "1"
		}
		for _, s := range []string{inv.ID, inv.Function, inv.Instance, failed} {
			_, _ = h.Write([]byte(s))
			_, _ = h.Write([]byte{0})
		}
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}

func (m *Mapped) unattributed(why string) {
	if m.Unattributed == nil {
		m.Unattributed = map[string]int{}
	}
	m.Unattributed[why]++
}

// maxServiceName bounds a service.name kept: a site's name is at most 60.
const maxServiceName = 256

// serviceName keeps a resource's service.name (read, not yet copied).
func (m *Mapped) serviceName(name string) {
	name = cut(name, maxServiceName)
	if name == "" {
		return
	}
	for _, n := range m.ServiceNames {
		if n == name {
			return
		}
	}
	if len(m.ServiceNames) < 8 {
		m.ServiceNames = append(m.ServiceNames, strings.Clone(name))
	}
}

// functionName reads a function's name from what a host or worker wrote:
// "ProcessOrders", "Functions.ProcessOrders" or "Host.Functions.ProcessOrders".
// A method's full name ("Contoso.Orders.Run") is not a function's name.
func functionName(s string) (string, bool) {
	if i := strings.LastIndex(s, "Functions."); i >= 0 {
		s = s[i+len("Functions."):]
	}
	return s, trigger.ValidName(s)
}

// unixNano is an OTLP time, or zero.
func unixNano(n uint64) time.Time {
	if n == 0 || n > 1<<62 {
		return time.Time{}
	}
	return time.Unix(0, int64(n)).UTC()
}

// cut shortens a sample for people.
func cut[S ~string | ~[]byte](s S, n int) S {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xc0 == 0x80 {
		n--
	}
	return s[:n]
}
