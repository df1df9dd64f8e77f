package otlp

import (
	"encoding/hex"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
)

// Dependency is a failed call a function made — a client or producer
// span with status ERROR, as the worker's and the SDKs' instrumentation
// write them (HttpClient, SqlClient, the Azure SDKs) — and what it
// called. Its trace is the failed invocation's: the host passes its
// trace to the worker, whose calls are its children, so the failure rows
// of a function that share the trace say which function made the call.
// The spans come in exports of their own, before or after the
// invocation's; they are matched when read (storage keeps both).
type Dependency struct {
	// Target names what was called: peer.service, else server.address
	// (net.peer.name before semantic conventions 1.21), else the
	// database, db.namespace (db.name before 1.26); lower case.
	Target string
	Trace  string // 32 hex digits
}

const (
	// MaxDependencies bounds the failed calls one export keeps (the first,
	// one per target and trace).
	MaxDependencies = 64
	// MaxTarget bounds a target: a host name is at most 253 bytes.
	MaxTarget = 253
)

// dependency is the failed call span f records, if it is one and names
// a target that reads as a host or service name.
func (f *spanFields) dependency() (Dependency, bool) {
	if f.code != tracepb.Status_STATUS_CODE_ERROR || f.kind != tracepb.Span_SPAN_KIND_CLIENT && f.kind != tracepb.Span_SPAN_KIND_PRODUCER {
		return Dependency{}, false
	}
	if len(f.traceID) != 16 || allZero(f.traceID) {
		return Dependency{}, false
	}
	var digits [20]byte
	var target []byte
	for _, a := range []*attrValue{&f.calls.peerService, &f.calls.serverAddress, &f.calls.netPeerName, &f.calls.dbNamespace, &f.calls.dbName} {
		if a.conflicting {
			continue
		}
		if t := a.text(&digits); len(t) > 0 {
			target = t
			break
		}
	}
	name, ok := targetName(target)
	if !ok {
		return Dependency{}, false
	}
	return Dependency{Target: name, Trace: hex.EncodeToString(f.traceID)}, true
}

// targetName is t in lower case when it reads as a host or service name:
// 1 to MaxTarget letters, digits and ".-_:"; anything else (a URL, a
// connection string, words) is no target.
func targetName(t []byte) (string, bool) {
	if len(t) == 0 || len(t) > MaxTarget {
		return "", false
	}
	out := make([]byte, len(t))
	for i, c := range t {
		switch {
		case c >= 'A' && c <= 'Z':
			c += 'a' - 'A'
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '.', c == '-', c == '_', c == ':':
		default:
			return "", false
		}
		out[i] = c
	}
	return string(out), true
}

// ValidTarget says whether s is a target as Dependency keeps them.
func ValidTarget(s string) bool {
	name, ok := targetName([]byte(s))
	return ok && name == s
}

// dependency keeps f's failed call, once per target and trace, up to
// MaxDependencies.
func (m *Mapped) dependency(f *spanFields) {
	if len(m.Dependencies) >= MaxDependencies {
		return
	}
	d, ok := f.dependency()
	if !ok {
		return
	}
	for _, have := range m.Dependencies {
		if have == d {
			return
		}
	}
	m.Dependencies = append(m.Dependencies, d)
}
