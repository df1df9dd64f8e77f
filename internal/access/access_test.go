package access_test

import (
	"context"
	"errors"
	"testing"

	"github.com/fusebox/fusebox/internal/access"
	"github.com/fusebox/fusebox/internal/alerts"
	"github.com/fusebox/fusebox/internal/audit"
	"github.com/fusebox/fusebox/internal/auth"
	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/downstream"
	"github.com/fusebox/fusebox/internal/jobs"
)

var (
	admin     = auth.Principal{Name: "ada", Role: auth.RoleAdmin}
	everyView = auth.Principal{Name: "val", Role: auth.RoleViewer}
	billingOp = auth.Principal{Name: "bo", Teams: map[string]auth.Role{"billing": auth.RoleOperator}}
	// A viewer of orders who operates billing: resending orders' notices
	// needs operator on orders.
	mixed  = auth.Principal{Name: "mo", Teams: map[string]auth.Role{"billing": auth.RoleOperator, "orders": auth.RoleViewer}}
	nobody = auth.Principal{Name: "nn"}
)

func TestTheRoleTableOfEveryKindOfOwner(t *testing.T) {
	orders := &access.Owner{Team: "orders", Found: true}
	shared := &access.Owner{Found: true, Shared: true}
	fusebox := &access.Owner{Found: true, Fusebox: true}
	missing := &access.Owner{}
	for _, tc := range []struct {
		name string
		p    auth.Principal
		o    *access.Owner
		role auth.Role
		want error
	}{
		{"an admin changes another team's app", admin, orders, auth.RoleOperator, nil},
		{"a viewer of every app reads orders' app", everyView, orders, auth.RoleViewer, nil},
		{"a viewer of every app may not act on it", everyView, orders, auth.RoleOperator, access.RoleError{Need: auth.RoleOperator, Held: auth.RoleViewer}},
		{"billing's operator does not see orders' app", billingOp, orders, auth.RoleViewer, access.ErrNotYours},
		{"nor act on it", billingOp, orders, auth.RoleOperator, access.ErrNotYours},
		{"orders' viewer sees it", mixed, orders, auth.RoleViewer, nil},
		{"orders' viewer who operates billing may not act on orders'", mixed, orders, auth.RoleOperator, access.RoleError{Need: auth.RoleOperator, Held: auth.RoleViewer}},
		{"a shared channel is read by a team's operator", billingOp, shared, auth.RoleViewer, nil},
		{"and changed only by an admin", billingOp, shared, auth.RoleOperator, access.ErrShared},
		{"one with no role and no team sees no shared channel", nobody, shared, auth.RoleViewer, access.ErrNotYours},
		{"Fusebox's own things are admins'", billingOp, fusebox, auth.RoleViewer, access.ErrNotYours},
		{"an admin reads them", admin, fusebox, auth.RoleViewer, nil},
		{"what does not exist answers as another team's", admin, missing, auth.RoleViewer, access.ErrNotYours},
		{"a list is open to one with no role, to say why it is empty", nobody, nil, auth.RoleViewer, nil},
		{"a form for something new needs operator somewhere", everyView, nil, auth.RoleOperator, access.RoleError{Need: auth.RoleOperator, Held: auth.RoleViewer}},
		{"which a team's operator holds", billingOp, nil, auth.RoleOperator, nil},
		{"Fusebox's own pages need admin", billingOp, nil, auth.RoleAdmin, access.RoleError{Need: auth.RoleAdmin, Held: auth.RoleOperator}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := access.Decide(tc.p, tc.o, tc.role); got != tc.want {
				t.Fatalf("Decide = %v, want %v", got, tc.want)
			}
		})
	}
}

// readers of one app of orders, one job of it, one downstream and one
// channel of orders and a shared one.
func readers() access.Readers {
	apps := []circuit.App{{ID: "orders-app", Team: "orders"}, {ID: "billing-app", Team: "billing"}}
	return access.Readers{
		Apps: func(context.Context) ([]circuit.App, error) { return apps, nil },
		App: func(_ context.Context, id string) (circuit.App, error) {
			for _, a := range apps {
				if a.ID == id {
					return a, nil
				}
			}
			return circuit.App{}, circuit.ErrNoApp
		},
		Job: func(_ context.Context, id string) (jobs.Job, error) {
			if id == "j1" {
				return jobs.Job{ID: "j1", AppID: "orders-app"}, nil
			}
			return jobs.Job{}, jobs.ErrNoJob
		},
		Jobs: func(context.Context) ([]jobs.Job, error) { return []jobs.Job{{ID: "j1", AppID: "orders-app"}}, nil },
		Channel: func(_ context.Context, id string) (alerts.Channel, error) {
			return alerts.Channel{}, alerts.ErrNoChannel
		},
		Channels: func(context.Context) ([]alerts.Channel, error) {
			return []alerts.Channel{{ID: "oncall", Team: "orders"}, {ID: "all"}}, nil
		},
		Downstream: func(_ context.Context, name string) (downstream.Downstream, error) {
			return downstream.Downstream{Name: name, Team: "orders"}, nil
		},
		Downstreams: func(context.Context) ([]downstream.Downstream, error) {
			return []downstream.Downstream{{Name: "sql", Team: "orders"}}, nil
		},
		Windows: func(context.Context) ([]jobs.Window, error) { return nil, nil },
		Tokens:  func(context.Context) ([]auth.IssuedToken, error) { return nil, nil },
	}
}

func TestNoPrincipalIsRefusedEverything(t *testing.T) {
	pol := &access.Policy{Read: readers()}
	ctx := t.Context()
	if err := pol.Check(ctx, access.Ref{Kind: access.App, ID: "orders-app"}, auth.RoleViewer); !errors.Is(err, access.ErrNoPrincipal) {
		t.Errorf("Check with no principal = %v, want ErrNoPrincipal", err)
	}
	if access.AppActed(ctx, circuit.App{ID: "orders-app", Team: "orders"}) {
		t.Error("AppActed with no principal: yes, want no")
	}
	if access.ChannelSeen(ctx, alerts.Channel{ID: "all"}) {
		t.Error("ChannelSeen of a shared channel with no principal: yes, want no")
	}
	if _, err := pol.AuditEntries(ctx, nil, []audit.Entry{{Target: "orders-app/F"}}, 10); !errors.Is(err, access.ErrNoPrincipal) {
		t.Errorf("AuditEntries with no principal = %v, want ErrNoPrincipal", err)
	}
	if _, err := pol.Messages(ctx, nil, auth.RoleViewer); !errors.Is(err, access.ErrNoPrincipal) {
		t.Errorf("Messages with no principal = %v, want ErrNoPrincipal", err)
	}
	sys := auth.WithPrincipal(ctx, auth.System)
	if err := pol.Check(sys, access.Ref{Kind: access.App, ID: "orders-app"}, auth.RoleOperator); err != nil {
		t.Errorf("Check as Fusebox itself = %v, want allowed", err)
	}
}

func TestChecksReadTheOwnerOfWhatIsNamed(t *testing.T) {
	pol := &access.Policy{Read: readers()}
	as := auth.WithPrincipal(t.Context(), billingOp)
	for _, ref := range []access.Ref{
		{Kind: access.App, ID: "orders-app"},
		{Kind: access.Job, ID: "j1"},
		{Kind: access.Downstream, ID: "sql"},
		{Kind: access.App, ID: "made-up"},
		{Kind: access.Job, ID: "made-up"},
		{Kind: access.Channel, ID: "made-up"},
	} {
		if err := pol.Check(as, ref, auth.RoleViewer); !errors.Is(err, access.ErrNotYours) {
			t.Errorf("billing's operator naming %+v: %v, want ErrNotYours (orders' and made-up things alike)", ref, err)
		}
	}
	if err := pol.Check(as, access.Ref{Kind: access.App, ID: "billing-app"}, auth.RoleOperator); err != nil {
		t.Errorf("billing's operator acting on billing's app: %v", err)
	}
}

func TestResendingNeedsOperatorOnTheSubjectsTeam(t *testing.T) {
	pol := &access.Policy{Read: readers()}
	ctx := auth.WithPrincipal(t.Context(), mixed)
	owners := map[string]string{"orders-app": "orders", "billing-app": "billing"}
	about := func(circuitID string) alerts.Message {
		return alerts.Message{Circuit: circuitID}
	}
	seen, err := pol.Messages(ctx, owners, auth.RoleViewer)
	if err != nil {
		t.Fatal(err)
	}
	acted, err := pol.Messages(ctx, owners, auth.RoleOperator)
	if err != nil {
		t.Fatal(err)
	}
	if m := about("orders-app/F"); !seen(m) || acted(m) {
		t.Errorf("orders' notice for orders' viewer: seen %v, resent %v; want seen, not resent", seen(m), acted(m))
	}
	if m := about("billing-app/F"); !acted(m) {
		t.Error("billing's notice for billing's operator: not resent, want resent")
	}
}

func TestAuditEntriesFollowTheirRecordedTeamNotTheirName(t *testing.T) {
	pol := &access.Policy{Read: readers()}
	ctx := auth.WithPrincipal(t.Context(), billingOp)
	owners := func() (map[string]string, error) {
		return map[string]string{"orders-app": "orders", "billing-app": "billing"}, nil
	}
	es := []audit.Entry{
		{Target: "orders-app/F", Team: "orders", Owned: true, Detail: "orders' trip"},
		{Target: "job:orders-app/SyncInventory", Team: "billing", Owned: true, Detail: "billing's job named like orders'"},
		{Target: "orders-app/G", Detail: "orders' entry from before teams were recorded"},
		{Target: "billing-app/F", Detail: "billing's entry from before"},
	}
	got, err := pol.AuditEntries(ctx, owners, es, 10)
	if err != nil {
		t.Fatal(err)
	}
	var details []string
	for _, e := range got {
		details = append(details, e.Detail)
	}
	want := []string{"billing's job named like orders'", "billing's entry from before"}
	if len(details) != len(want) || details[0] != want[0] || details[1] != want[1] {
		t.Fatalf("billing's operator reads %q, want %q", details, want)
	}
}
