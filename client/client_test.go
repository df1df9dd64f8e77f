package client_test

import (
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fusebox/fusebox/client"
	"github.com/fusebox/fusebox/internal/apptest"
	"github.com/fusebox/fusebox/internal/demo"
	"github.com/fusebox/fusebox/internal/storage"
)

func stored(t *testing.T, srv *apptest.Server) int {
	t.Helper()
	now := srv.Clock.Now()
	rows, _, err := srv.App.Store.Failures.ReadFailures(t.Context(), now.Add(-time.Hour), now.Add(time.Hour), time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, r := range rows {
		n += r.Count
	}
	return n
}

func TestReporterAggregatesSendsAndRetries(t *testing.T) {
	srv := apptest.Start(t, nil)
	if err := demo.Seed(t.Context(), srv.App.Store, t.TempDir()+"/local.settings.json", srv.Clock.Now()); err != nil {
		t.Fatal(err)
	}
	r, err := client.New(client.Options{URL: srv.URL, Key: demo.Key, Now: srv.Clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	for range 60 {
		r.Failure("ProcessOrders", nil)
	}
	r.Failures("SyncInventory", 5, srv.Clock.Now().Add(-time.Second), "timeout")

	// Fusebox cannot store: the flush fails and the counts stay pending.
	if err := srv.App.Store.Service.DeleteTable(t.Context(), storage.TableFailures); err != nil {
		t.Fatal(err)
	}
	if err := r.Flush(t.Context()); err == nil || !strings.Contains(err.Error(), "503") {
		t.Fatalf("flush while storage is down: %v, want a 503", err)
	}
	for range 41 {
		r.Failure("ProcessOrders", nil)
	}
	if err := srv.App.Store.Service.CreateTable(t.Context(), storage.TableFailures); err != nil {
		t.Fatal(err)
	}
	if err := r.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	if n := stored(t, srv); n != 106 {
		t.Errorf("%d failures stored, want 106 (101 + 5), none lost or doubled", n)
	}
	if err := r.Flush(t.Context()); err != nil {
		t.Errorf("an empty flush: %v", err)
	}
	if n := stored(t, srv); n != 106 {
		t.Errorf("%d after an empty flush, want 106", n)
	}
}

func TestReporterDropsWhatCanNeverSucceed(t *testing.T) {
	srv := apptest.Start(t, nil)
	r, err := client.New(client.Options{URL: srv.URL, Key: "fbx_nobody_secret", Now: srv.Clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	r.Failure("ProcessOrders", nil)
	if err := r.Flush(t.Context()); err == nil || !strings.Contains(err.Error(), "401") {
		t.Fatalf("flush with an unknown key: %v, want a 401", err)
	}
	if err := r.Flush(t.Context()); err != nil {
		t.Errorf("the refused counts were kept and sent again: %v", err)
	}
	if _, err := client.New(client.Options{URL: srv.URL, Key: "secret"}); err == nil {
		t.Error("a key without the fbx_ form was accepted")
	}
}

func TestReporterBoundsWhatItKeeps(t *testing.T) {
	r, err := client.New(client.Options{URL: "http://127.0.0.1:1", Key: "fbx_a_b", MaxPending: 3})
	if err != nil {
		t.Fatal(err)
	}
	base := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	for i := range 5 {
		r.Failures("F", 2, base.Add(time.Duration(i)*time.Second), "")
	}
	if got := r.Dropped(); got != 4 {
		t.Errorf("Dropped = %d, want the 4 failures of the 2 oldest seconds", got)
	}
}

// Successes are counted locally like failures and sent in the same flush,
// so a ratio circuit can weigh one against the other.
func TestReporterSendsSuccesses(t *testing.T) {
	srv := apptest.Start(t, nil)
	if err := demo.Seed(t.Context(), srv.App.Store, t.TempDir()+"/local.settings.json", srv.Clock.Now()); err != nil {
		t.Fatal(err)
	}
	r, err := client.New(client.Options{URL: srv.URL, Key: demo.Key, Now: srv.Clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	for range 990 {
		r.Success("ProcessOrders")
	}
	for range 10 {
		r.Failure("ProcessOrders", nil)
	}
	r.Successes("SyncInventory", 7, srv.Clock.Now())
	if err := r.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	now := srv.Clock.Now()
	rows, _, err := srv.App.Store.Failures.ReadFailures(t.Context(), now.Add(-time.Hour), now.Add(time.Hour), time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][2]int{}
	for _, row := range rows {
		g := got[row.Circuit]
		got[row.Circuit] = [2]int{g[0] + row.Count, g[1] + row.Successes}
	}
	if got[demo.AppID+"/ProcessOrders"] != [2]int{10, 990} || got[demo.AppID+"/SyncInventory"] != [2]int{0, 7} {
		t.Errorf("stored (failures, successes) = %v, want ProcessOrders (10, 990) and SyncInventory (0, 7)", got)
	}
}

// A batch that Fusebox stored but whose answer was lost on the way back is
// sent again with the same Idempotency-Key, and counted once.
func TestARetryAfterALostAnswerCountsOnce(t *testing.T) {
	srv := apptest.Start(t, nil)
	if err := demo.Seed(t.Context(), srv.App.Store, t.TempDir()+"/local.settings.json", srv.Clock.Now()); err != nil {
		t.Fatal(err)
	}
	target, _ := url.Parse(srv.URL)
	proxy := httputil.NewSingleHostReverseProxy(target)
	var lose atomic.Bool
	lose.Store(true)
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if lose.CompareAndSwap(true, false) {
			// Fusebox gets and stores the request; its answer never arrives.
			proxy.ServeHTTP(httptest.NewRecorder(), req)
			http.Error(w, "bad gateway", http.StatusBadGateway)
			return
		}
		proxy.ServeHTTP(w, req)
	}))
	defer front.Close()
	r, err := client.New(client.Options{URL: front.URL, Key: demo.Key, Now: srv.Clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	r.Failures("ProcessOrders", 60, srv.Clock.Now(), "timeout")
	if err := r.Flush(t.Context()); err == nil {
		t.Fatal("a lost answer was taken for success")
	}
	if n := stored(t, srv); n != 60 {
		t.Fatalf("%d stored after the first try, want 60 (stored, answer lost)", n)
	}
	r.Failures("ProcessOrders", 5, srv.Clock.Now(), "timeout") // new counts meanwhile
	if err := r.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	if n := stored(t, srv); n != 65 {
		t.Errorf("%d stored after the retry, want 65: the lost batch once, and the new 5", n)
	}
}
