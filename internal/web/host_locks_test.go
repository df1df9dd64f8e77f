package web_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/lease"

	"github.com/fusebox/fusebox/internal/apptest"
	"github.com/fusebox/fusebox/internal/demo"
	"github.com/fusebox/fusebox/internal/hostinsight"
	"github.com/fusebox/fusebox/internal/testenv"
)

// A lock the functions' code took and never let go shows on the Locks
// page; an operator breaks it after a confirmation, and the audit log
// says who. The host lock can never be broken from here.
func TestAStuckHostLockIsShownAndBroken(t *testing.T) {
	t.Parallel()
	srv := apptest.Start(t, map[string]string{"FUSEBOX_HOST_LOCK_BREAK_AFTER": "0s"})
	conn := testenv.ConnectionString(t)
	if err := demo.Seed(t.Context(), srv.App.Store, t.TempDir()+"/local.settings.json", srv.Clock.Now()); err != nil {
		t.Fatal(err)
	}
	if err := demo.SeedHostStorage(t.Context(), srv.App.Store, conn, srv.Clock.Now(), demo.HostSeed{}); err != nil {
		t.Fatal(err)
	}
	name, blob := testenv.StuckLock(t, hostinsight.HostsContainer, "order-42")

	// The Locks page is Fusebox's own: admins'.
	viewer := newBrowser(t, srv.URL)
	viewer.signIn("victor")
	wantStatus(t, viewer.get("/locks"), http.StatusForbidden)
	q := "?app=" + demo.AppID + "&blob=" + url.QueryEscape(name)
	wantStatus(t, viewer.get("/locks/host/break"+q), http.StatusForbidden)

	op := newBrowser(t, srv.URL)
	op.signIn("olivia")
	if page := op.get("/locks").body; !strings.Contains(page, `data-testid="break"`) {
		t.Fatalf("an admin is not offered Break on the stuck lock")
	}
	confirm := op.get("/locks/host/break" + q)
	wantStatus(t, confirm, http.StatusOK)
	if !strings.Contains(confirm.body, "two instances may then do the same work") {
		t.Error("the confirmation does not say what breaking risks")
	}
	r := op.post("/locks/host/break", url.Values{"_csrf": {op.csrf("/locks/host/break" + q)}, "app": {demo.AppID}, "blob": {name}})
	wantStatus(t, r, http.StatusSeeOther)
	props, err := blob.GetProperties(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if props.LeaseState == nil || *props.LeaseState != lease.StateTypeBroken {
		t.Errorf("lease state after Break = %v, want broken", props.LeaseState)
	}
	if audit := op.get("/audit").body; !strings.Contains(audit, "broke host lock") || !strings.Contains(audit, "order-42") {
		t.Error("the audit log does not record the break")
	}
	// The host lock is the running host's: never breakable here.
	hostQ := "?app=" + demo.AppID + "&blob=" + url.QueryEscape("locks/func-orders-demo/host")
	if r := op.get("/locks/host/break" + hostQ); r.StatusCode != http.StatusConflict && r.StatusCode != http.StatusNotFound {
		t.Errorf("confirming a break of the host lock: %d", r.StatusCode)
	}
}
