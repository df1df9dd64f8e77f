package web_test

import (
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/fusebox/fusebox/internal/apptest"
	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/demo"
)

// With many circuits the list is found by name and shown a page at a
// time: a search by part of a function's name (any case) keeps only those,
// pages hold 100 rows and keep the filters, and a page past the end shows
// the last one.
func TestTheCircuitListIsSearchedAndPaged(t *testing.T) {
	t.Parallel()
	srv, _ := apptest.Seeded(t)
	ctx := t.Context()
	if err := srv.App.Store.Apps.Put(ctx, circuit.App{ID: "many", Switch: circuit.SwitchLocal, LocalSettings: t.TempDir() + "/local.settings.json"}); err != nil {
		t.Fatal(err)
	}
	for i := range 250 {
		if err := srv.App.Store.Circuits.Put(ctx, circuit.Circuit{AppID: "many", Function: fmt.Sprintf("Fn%03d", i), Settings: circuit.Settings{Threshold: 10, Window: time.Minute}, ChangedAt: srv.Clock.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	b := newBrowser(t, srv.URL)
	b.signIn("victor")
	rows := func(body string) int { return strings.Count(body, `<tr data-circuit="`) }

	first := b.get("/circuits?app=many")
	wantStatus(t, first, http.StatusOK)
	if n := rows(first.body); n != 100 || !strings.Contains(first.body, "250 circuits · page 1 of 3") || !strings.Contains(first.body, `href="/circuits?app=many&amp;page=2"`) {
		t.Fatalf("page 1 shows %d rows, want 100 with a link to page 2:\n%s", n, first.body)
	}
	last := b.get("/circuits?app=many&page=9")
	if n := rows(last.body); n != 50 || !strings.Contains(last.body, "page 3 of 3") || !strings.Contains(last.body, "Fn249") {
		t.Fatalf("a page past the end shows %d rows, want the last page's 50", n)
	}
	found := b.get("/circuits?app=many&q=n12")
	if n := rows(found.body); n != 10 || strings.Contains(found.body, "Fn012") || strings.Contains(found.body, `data-testid="pager"`) {
		t.Fatalf("a search for n12 shows %d rows, want Fn120–Fn129 on one page", n)
	}
	if n := rows(b.get("/circuits?q=SYNCinv").body); n != 1 {
		t.Errorf("a search in another case shows %d rows, want SyncInventory", n)
	}
}

// The window's chart adds the failures up across the window and draws the
// threshold as a line, so a person sees how near the circuit is to
// tripping; its text alternative carries the numbers.
func TestTheWindowChartAddsUpToTheThresholdLine(t *testing.T) {
	t.Parallel()
	srv, _ := apptest.Seeded(t)
	wantStatus(t, postJSON(t, srv.URL, demo.Key, `{"failures": [{"function": "ProcessOrders", "count": 40}]}`), http.StatusAccepted)
	b := newBrowser(t, srv.URL)
	b.signIn("victor")
	page := b.get("/circuits/" + demo.AppID + "/ProcessOrders").body
	for _, want := range []string{">threshold 100<", `data-testid="chart-max">100<`, `: highest 100, total `} {
		if !strings.Contains(page, want) {
			t.Errorf("the window chart lacks %q", want)
		}
	}
	desc := regexp.MustCompile(`<desc>−30s to now: ([0-9, ]+)</desc>`).FindStringSubmatch(page)
	if desc == nil || !strings.HasSuffix(desc[1], "40") {
		t.Fatalf("the window chart's values do not add up to the 40 failures reported: %v", desc)
	}
}
