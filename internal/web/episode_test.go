package web_test

import (
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/fusebox/fusebox/internal/apptest"
	"github.com/fusebox/fusebox/internal/demo"
)

// A viewer opens the demo's open circuit's episode (SyncInventory, episode 3) from its flip log: the
// record names the trip and what failed. An episode path that is not a
// number from 1 is refused (400) before any circuit is looked up, so a
// made-up app in the same path gets the same answer, not the 404 of a
// circuit that is not there.
func TestAnEpisodesRecordIsOneLinkFromTheFlipLog(t *testing.T) {
	t.Parallel()
	srv := apptest.StartStill(t, nil)
	if err := demo.Seed(t.Context(), srv.App.Store, t.TempDir()+"/local.settings.json", srv.Clock.Now()); err != nil {
		t.Fatal(err)
	}
	if err := demo.SeedHistory(t.Context(), srv.App.Store, srv.Clock.Now()); err != nil {
		t.Fatal(err)
	}
	victor := newBrowser(t, srv.URL)
	victor.signIn("victor")
	page := victor.get("/circuits/" + demo.AppID + "/SyncInventory")
	m := regexp.MustCompile(`href="(/circuits/[^"]+/episodes/(\d+))" data-testid="episode-link"`).FindStringSubmatch(page.body)
	if m == nil {
		t.Fatalf("the open circuit's flip log links to no episode:\n%.2000s", page.body)
	}
	rec := victor.get(m[1])
	if rec.StatusCode != http.StatusOK || !strings.Contains(rec.body, "episode "+m[2]) || !strings.Contains(rec.body, `data-testid="error-group"`) {
		t.Fatalf("the episode's page: %d, want its number and what failed\n%.2000s", rec.StatusCode, rec.body)
	}

	if !strings.Contains(rec.body, "Not resumed yet") {
		t.Errorf("the open episode's catch-up does not say it is not resumed yet")
	}
	if first := victor.get("/circuits/" + demo.AppID + "/SyncInventory/episodes/1"); first.StatusCode != http.StatusOK || !strings.Contains(first.body, "Later episodes followed") ||
		!strings.Contains(first.body, "resumed by alice") {
		t.Errorf("the first episode's record: %d; want alice's resume and that later episodes followed", first.StatusCode)
	}

	for _, path := range []string{
		"/circuits/" + demo.AppID + "/SyncInventory/episodes/0",
		"/circuits/" + demo.AppID + "/SyncInventory/episodes/-1",
		"/circuits/" + demo.AppID + "/SyncInventory/episodes/1e3",
		"/circuits/" + demo.AppID + "/SyncInventory/episodes/99999999999999999999999999",
		"/circuits/" + demo.AppID + "/NoSuchFunction/episodes/x",
		"/api/v1/circuits/" + demo.AppID + "/NoSuchFunction/episodes/x",
	} {
		got := victor.get(path)
		if got.StatusCode != http.StatusBadRequest || !strings.Contains(got.body, "An episode is a number from 1.") {
			t.Errorf("GET %s: %d %.200s; want 400 saying what an episode is", path, got.StatusCode, got.body)
		}
	}
	// A later episode than the circuit has had did not start with a trip.
	if got := victor.get("/circuits/" + demo.AppID + "/SyncInventory/episodes/1000"); got.StatusCode != http.StatusNotFound {
		t.Errorf("an episode yet to come: %d, want 404", got.StatusCode)
	}
}

// An episode's record shows its catch-up from the waiting counts kept
// each minute: the most that waited, and when none were left after the
// resume; an episode with no counts kept says why.
func TestAnEpisodesRecordShowsTheWaitingDrain(t *testing.T) {
	t.Parallel()
	srv := apptest.StartStill(t, nil)
	ctx := t.Context()
	if err := demo.Seed(ctx, srv.App.Store, t.TempDir()+"/local.settings.json", srv.Clock.Now()); err != nil {
		t.Fatal(err)
	}
	if err := demo.SeedHistory(ctx, srv.App.Store, srv.Clock.Now()); err != nil {
		t.Fatal(err)
	}
	ci, err := srv.App.Store.Circuits.Get(ctx, demo.AppID, "SyncInventory")
	if err != nil {
		t.Fatal(err)
	}
	ci.EventHub = "inventory"
	if err := srv.App.Store.Circuits.UpdateSettings(ctx, ci); err != nil {
		t.Fatal(err)
	}
	flips, err := srv.App.Store.Circuits.Flips(ctx, demo.AppID, "SyncInventory", 50)
	if err != nil {
		t.Fatal(err)
	}
	var trip, resume time.Time
	for _, f := range flips {
		switch f.Episode {
		case 1:
			trip = f.At
		case 2:
			resume = f.At
		}
	}
	if trip.IsZero() || !resume.After(trip) {
		t.Fatalf("the demo's first episode: trip %s, resume %s", trip, resume)
	}
	put := func(at time.Time, n int64) {
		t.Helper()
		if err := srv.App.Store.HostSamples.PutWaiting(ctx, demo.AppID, "SyncInventory", at, n); err != nil {
			t.Fatal(err)
		}
	}
	put(trip.Add(time.Minute), 120)
	put(resume.Add(-time.Minute), 900)
	for m, n := range map[int]int64{1: 500, 3: 200, 7: 0, 8: 0} {
		put(resume.Add(time.Duration(m)*time.Minute), n)
	}
	victor := newBrowser(t, srv.URL)
	victor.signIn("victor")
	first := victor.get("/circuits/" + demo.AppID + "/SyncInventory/episodes/1")
	drain := section(first.body, `data-testid="episode-drain"`)
	want := "At most 900 events waited (" + resume.Add(-time.Minute).UTC().Format("15:04 MST") + "). After the resume at " + resume.UTC().Format("15:04") +
		", none were left by " + resume.Add(7*time.Minute).UTC().Format("15:04 MST") + ", 7m later."
	if !strings.Contains(drain, want) || !strings.Contains(drain, "<svg") {
		t.Errorf("the first episode's catch-up does not show the drain; want %q in\n%s", want, drain)
	}
	// Counts that never rose say so, not "at most 0".
	for _, at := range []time.Time{trip.Add(time.Minute), resume.Add(-time.Minute), resume.Add(time.Minute), resume.Add(3 * time.Minute)} {
		put(at, 0)
	}
	if calm := victor.get("/circuits/" + demo.AppID + "/SyncInventory/episodes/1"); !strings.Contains(calm.body, "No event waited at any of the") {
		t.Errorf("an episode whose counts stayed at 0 does not say so:\n%s", section(calm.body, `data-testid="episode-drain"`))
	}
	open := victor.get("/circuits/" + demo.AppID + "/SyncInventory/episodes/3")
	if !strings.Contains(open.body, "No waiting counts were kept for this episode") {
		t.Errorf("the open episode with no counts kept does not say so")
	}
}
