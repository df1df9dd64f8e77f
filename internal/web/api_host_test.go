package web_test

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/fusebox/fusebox/internal/amqphub"
	"github.com/fusebox/fusebox/internal/amqphub/amqphubtest"
	"github.com/fusebox/fusebox/internal/apptest"
	"github.com/fusebox/fusebox/internal/demo"
	"github.com/fusebox/fusebox/internal/testenv"
)

// The API says what the circuit page says: where each partition of the
// function's hub stands, how many events wait behind it, read from the
// hub, and no learned concurrency (Event Hubs triggers have none); a
// partition the hub does not answer for has no count, and says so in
// problems.
func TestAPIShowsWhereAFunctionResumes(t *testing.T) {
	t.Parallel()
	srv, _, viewer := apiServer(t)
	if err := demo.Seed(t.Context(), srv.App.Store, t.TempDir()+"/local.settings.json", srv.Clock.Now()); err != nil {
		t.Fatal(err)
	}
	addr := amqphubtest.Serve(t, amqphub.Fixed{"orders": {
		"0": {Last: 48300}, "1": {Last: 47930}, "2": {Last: 48600}, // no partition 3
	}})
	ns := strings.ToLower(testenv.Prefix(t)) + ".servicebus.windows.net"
	if err := demo.SeedHostStorage(t.Context(), srv.App.Store, testenv.ConnectionString(t), srv.Clock.Now(), demo.HostSeed{HubAddr: addr, Namespace: ns}); err != nil {
		t.Fatal(err)
	}
	res := viewer.call(http.MethodGet, "/api/v1/circuits/"+demo.AppID+"/ProcessOrders/host", "")
	wantStatus(t, res, http.StatusOK)
	var got struct {
		Own       bool
		Positions []struct {
			Partition string
			Sequence  *int64
			Waiting   *int64
		}
		Waiting     *int64
		Concurrency *int `json:"learned_concurrency"`
		Problems    []struct{ Blob, Reason string }
	}
	if err := json.Unmarshal([]byte(res.body), &got); err != nil {
		t.Fatal(err)
	}
	var seen []string
	for _, p := range got.Positions {
		s := p.Partition + ":" + orNull(p.Sequence) + "+" + orNull(p.Waiting)
		seen = append(seen, s)
	}
	if !got.Own || strings.Join(seen, " ") != "0:48211+89 1:47930+0 2:48502+98 3:48117+null" {
		t.Errorf("own %v, positions %v; want 0:48211+89 1:47930+0 2:48502+98 3:48117+null", got.Own, seen)
	}
	// Dynamic concurrency does not cover Event Hubs triggers: the host's
	// snapshot has none for ProcessOrders.
	if got.Waiting == nil || *got.Waiting != 187 || got.Concurrency != nil {
		t.Errorf("waiting %v, learned concurrency %v; want 187 and none", orNull(got.Waiting), got.Concurrency)
	}
	named := false
	for _, p := range got.Problems {
		named = named || (strings.Contains(p.Blob, ns+"/orders") && strings.Contains(p.Reason, "partition 3"))
	}
	if !named {
		t.Errorf("problems %+v do not name partition 3 of %s/orders", got.Problems, ns)
	}
}

// orNull prints a JSON number that may be null.
func orNull(p *int64) string {
	if p == nil {
		return "null"
	}
	return strconv.FormatInt(*p, 10)
}

// A list's Waiting cell, asked for after the list has loaded, gives the
// count with what it covers, or a question mark when Event Hubs did not
// answer for the function's hub.
func TestAListsWaitingCellSaysHowManyOrWhyNot(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		hub  amqphub.Fixed
		want []string
	}{
		"three of four partitions answered": {
			hub:  amqphub.Fixed{"orders": {"0": {Last: 48300}, "1": {Last: 47930}, "2": {Last: 48600}}},
			want: []string{`data-testid="waiting-count">187<`, `About 187 events waiting on the 3 of 4 partitions Event Hubs answered for`},
		},
		"no such hub": {
			hub:  amqphub.Fixed{},
			want: []string{`>?<`, `Event Hubs did not say how many wait`},
		},
	} {
		t.Run(name, func(t *testing.T) {
			srv := apptest.Start(t, nil)
			if err := demo.Seed(t.Context(), srv.App.Store, t.TempDir()+"/local.settings.json", srv.Clock.Now()); err != nil {
				t.Fatal(err)
			}
			ns := testenv.Prefix(t) + ".servicebus.windows.net"
			if err := demo.SeedHostStorage(t.Context(), srv.App.Store, testenv.ConnectionString(t), srv.Clock.Now(),
				demo.HostSeed{HubAddr: amqphubtest.Serve(t, tc.hub), Namespace: ns}); err != nil {
				t.Fatal(err)
			}
			b := newBrowser(t, srv.URL)
			b.signIn("victor")
			cell := b.get("/circuits/" + demo.AppID + "/ProcessOrders/waiting")
			wantStatus(t, cell, http.StatusOK)
			for _, w := range tc.want {
				if !strings.Contains(cell.body, w) {
					t.Errorf("the cell lacks %q:\n%s", w, cell.body)
				}
			}
		})
	}
}
