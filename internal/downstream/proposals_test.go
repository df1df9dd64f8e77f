package downstream_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/downstream"
	"github.com/fusebox/fusebox/internal/errortexts"
	"github.com/fusebox/fusebox/internal/otlp"
)

// texts are each circuit's error groups, as errortexts reads them; reads
// counts the circuits read.
type texts struct {
	groups map[string][]errortexts.Group
	reads  int
}

func (x *texts) OfCircuit(_ context.Context, ci circuit.Circuit, _ time.Time, _ int) ([]errortexts.Group, int, string, error) {
	x.reads++
	return x.groups[ci.ID()], 0, "", nil
}

// calls are an app's arrival rows with the targets of its failed calls.
type calls map[string][]otlp.Arrival

func (c calls) ArrivalsOf(_ context.Context, appID string, _ time.Time) ([]otlp.Arrival, error) {
	return c[appID], nil
}

func allFailing(_ context.Context, cs []circuit.Circuit) (map[string]circuit.Counts, error) {
	out := map[string]circuit.Counts{}
	for _, c := range cs {
		out[c.ID()] = circuit.Counts{Window: 1}
	}
	return out, nil
}

// A host that failures of two apps name is proposed with its members,
// whether an error text or a failed call's span names it; a host one app
// names, and dotted words that name no host, are not.
func TestAHostTwoAppsFailOnIsProposed(t *testing.T) {
	orders := circuit.Circuit{AppID: "orders", Function: "Process"}
	billing := circuit.Circuit{AppID: "billing", Function: "Charge"}
	ship := circuit.Circuit{AppID: "shipping", Function: "Label"}
	x := &texts{groups: map[string][]errortexts.Group{
		orders.ID():  {{Example: "A network error occurred talking to orders-db.database.windows.net:1433 (System.Net.Sockets.SocketException)", Traces: []string{"t1"}}},
		billing.ID(): {{Example: "Timeout connecting to orders-db.database.windows.net after 30s in Billing.cs"}},
		ship.ID():    {{Example: "labels.example.org refused the request", Traces: []string{"t2"}}},
	}}
	p := downstream.Proposer{Failing: allFailing, Samples: x, Now: time.Now,
		Calls: calls{"orders": {{Calls: map[string][]string{"labels.example.org": {"t1"}}}}}}
	got := p.Propose(t.Context(), []circuit.Circuit{orders, billing, ship})
	want := []downstream.Proposal{
		{Host: "labels.example.org", Members: []string{orders.ID(), ship.ID()}, Apps: 2, Calls: true},
		{Host: "orders-db.database.windows.net", Members: []string{billing.ID(), orders.ID()}, Apps: 2},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("proposed %+v\nwant %+v", got, want)
	}
}

// A list of a thousand failing circuits costs at most fifty reads of
// error texts.
func TestProposingReadsABoundedNumberOfCircuits(t *testing.T) {
	var cs []circuit.Circuit
	for i := range 1000 {
		cs = append(cs, circuit.Circuit{AppID: fmt.Sprintf("app%d", i), Function: "F"})
	}
	x := &texts{}
	downstream.Proposer{Failing: allFailing, Samples: x, Now: time.Now}.Propose(t.Context(), cs)
	if x.reads > 50 {
		t.Errorf("%d circuits' error texts read for one list", x.reads)
	}
	if got := (downstream.Proposer{Failing: func(context.Context, []circuit.Circuit) (map[string]circuit.Counts, error) {
		return nil, nil
	}, Samples: x, Now: time.Now}).Propose(t.Context(), cs); len(got) != 0 {
		t.Errorf("no failing circuit proposed %v", got)
	}
}
