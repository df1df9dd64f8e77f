package downstream

import (
	"context"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/errortexts"
	"github.com/fusebox/fusebox/internal/otlp"
)

// Proposal is a host that the failures of circuits in more than one app
// name: likely a dependency they share, to be named a downstream.
type Proposal struct {
	Host    string
	Members []string // circuit ids, sorted
	Apps    int
	// Calls says failed calls' spans name it, not only error texts.
	Calls bool
}

// Proposer reads what the failing circuits' error texts and failed calls
// name, for the Downstreams page.
type Proposer struct {
	// Failing counts the circuits with failures in their window
	// (circuit.Service).
	Failing func(ctx context.Context, cs []circuit.Circuit) (map[string]circuit.Counts, error)
	Samples errortexts.Grouper
	// Calls are what arrived over OTLP; nil proposes from error texts
	// alone.
	Calls otlp.ArrivalReader
	Now   func() time.Time
}

// maxProposalCircuits bounds the circuits one reading reads error texts
// of: a list of thousands costs at most this many reads.
const maxProposalCircuits = 50

// hostRE finds host names in error texts: dotted names such as
// orders-db.database.windows.net, with an optional port.
var hostRE = regexp.MustCompile(`\b([a-zA-Z0-9][a-zA-Z0-9-]*(?:\.[a-zA-Z0-9-]+)+)(?::\d{2,5})?\b`)

// notHosts are dotted words error texts carry that name no host.
var notHosts = regexp.MustCompile(`(?i)^(system|microsoft|azure\.functions|java|javax|org|com\.microsoft|node|python|[0-9.]+)(\.|$)|\.(cs|js|ts|py|java|dll|exe|json|txt)$`)

// Propose names the hosts and services in the failures of circuits of
// more than one app among cs: in the error groups of circuits with
// failures, and as the targets of failed calls (otlp.Dependency) in the
// traces those groups name. The calls come in exports of their own, before
// or after the invocations': both are stored, and matched here. A read
// that fails costs its circuit's or app's part only.
func (p Proposer) Propose(ctx context.Context, cs []circuit.Circuit) []Proposal {
	failing, err := p.Failing(ctx, cs)
	if err != nil || len(failing) == 0 {
		return nil
	}
	now := p.Now()
	type named struct {
		circuits []string
		byCalls  bool
	}
	byHost := map[string]*named{}
	name := func(host, id string, byCalls bool) {
		n := byHost[host]
		if n == nil {
			n = &named{}
			byHost[host] = n
		}
		if !slices.Contains(n.circuits, id) {
			n.circuits = append(n.circuits, id)
		}
		n.byCalls = n.byCalls || byCalls
	}
	calls := map[string]map[string][]string{} // app -> trace -> targets, read once per app
	looked := 0
	for _, ci := range cs {
		if _, ok := failing[ci.ID()]; !ok || looked >= maxProposalCircuits {
			continue
		}
		looked++
		groups, _, _, err := p.Samples.OfCircuit(ctx, ci, now, 5)
		if err != nil {
			continue
		}
		for _, g := range groups {
			for _, m := range hostRE.FindAllStringSubmatch(g.Example, 10) {
				if h := strings.ToLower(m[1]); !notHosts.MatchString(h) && strings.ContainsAny(h, "abcdefghijklmnopqrstuvwxyz") {
					name(h, ci.ID(), false)
				}
			}
			if len(g.Traces) == 0 {
				continue
			}
			byTrace, ok := calls[ci.AppID]
			if !ok {
				byTrace = p.callsOf(ctx, ci.AppID, now)
				calls[ci.AppID] = byTrace
			}
			for _, trace := range g.Traces {
				for _, target := range byTrace[trace] {
					name(target, ci.ID(), true)
				}
			}
		}
	}
	var out []Proposal
	for h, n := range byHost {
		apps := map[string]bool{}
		for _, id := range n.circuits {
			app, _, _ := circuit.SplitID(id)
			apps[app] = true
		}
		if len(apps) < 2 {
			continue
		}
		slices.Sort(n.circuits)
		out = append(out, Proposal{Host: h, Members: n.circuits, Apps: len(apps), Calls: n.byCalls})
	}
	slices.SortFunc(out, func(a, b Proposal) int { return strings.Compare(a.Host, b.Host) })
	return out
}

// callsOf is, for the traces of an app's failed calls in the last hour,
// what each called; none when Fusebox keeps no calls or they do not read.
func (p Proposer) callsOf(ctx context.Context, appID string, now time.Time) map[string][]string {
	if p.Calls == nil {
		return nil
	}
	rows, err := p.Calls.ArrivalsOf(ctx, appID, now.Add(-time.Hour))
	if err != nil {
		return nil
	}
	byTrace := map[string][]string{}
	for _, r := range rows {
		for target, traces := range r.Calls {
			for _, trace := range traces {
				if !slices.Contains(byTrace[trace], target) {
					byTrace[trace] = append(byTrace[trace], target)
				}
			}
		}
	}
	return byTrace
}
