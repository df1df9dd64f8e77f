package web_test

import (
	"net/http"
	"strings"
	"testing"
)

func TestJobPagesShowSlotsGapsAndRuns(t *testing.T) {
	srv, _ := seeded(t)
	b := newBrowser(t, srv.URL)
	b.signIn("victor")
	list := b.get("/jobs")
	wantStatus(t, list, http.StatusOK)
	for _, want := range []string{`href="/jobs/5f0c6a1e-7d1b-4c59-9a55-0d6c1e2b7a01"`, "Nightly sales summary", "71%"} {
		if !strings.Contains(list.body, want) {
			t.Errorf("jobs list lacks %q", want)
		}
	}
	page := b.get("/jobs/5f0c6a1e-7d1b-4c59-9a55-0d6c1e2b7a01")
	wantStatus(t, page, http.StatusOK)
	for _, want := range []string{`data-testid="heatmap"`, `class="missed"`, `class="failed"`, `data-testid="gaps"`,
		"/ping/5f0c6a1e-7d1b-4c59-9a55-0d6c1e2b7a01", `data-testid="runs"`, "Asia/Tokyo"} {
		if !strings.Contains(page.body, want) {
			t.Errorf("job page lacks %q", want)
		}
	}
	if strings.Count(page.body, `<span class="badge bad">missed</span>`) != 1 || strings.Count(page.body, `<span class="badge bad">failed</span>`) < 1 {
		t.Errorf("the gaps list should show the one missed night and the failed one")
	}
	many := b.get("/jobs/5f0c6a1e-7d1b-4c59-9a55-0d6c1e2b7a03")
	if !strings.Contains(many.body, "Older runs") {
		t.Error("a job with many runs offers no older page")
	}
	wantStatus(t, b.get("/jobs/00000000-0000-4000-8000-000000000000"), http.StatusNotFound)
}
