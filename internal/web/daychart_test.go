package web_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/fusebox/fusebox/internal/apptest"
	"github.com/fusebox/fusebox/internal/demo"
)

// A circuit that has just counted 101 failures says so in its "Last 24
// hours" chart: the minute roll-up keeps only whole minutes, up to two
// behind, so the minutes since come from the circuit's own rows (it
// showed 0 until the roll-up caught up).
func TestTheDayChartShowsFailuresJustCounted(t *testing.T) {
	t.Parallel()
	srv, _ := apptest.Seeded(t)
	wantStatus(t, postJSON(t, srv.URL, demo.Key, `{"failures": [{"function": "ProcessOrders", "count": 101}]}`), http.StatusAccepted)
	b := newBrowser(t, srv.URL)
	b.signIn("victor")
	page := b.get("/circuits/" + demo.AppID + "/ProcessOrders")
	wantStatus(t, page, http.StatusOK)
	if want := `aria-label="failures per 15 minutes, last 24 hours: highest 101, total 101"`; !strings.Contains(page.body, want) {
		i := strings.Index(page.body, "failures per 15 minutes")
		t.Errorf("the day chart does not say the 101 failures just counted: %s", page.body[max(i-20, 0):min(i+120, len(page.body))])
	}
}
