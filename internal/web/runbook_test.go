package web_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/fusebox/fusebox/internal/apptest"
	"github.com/fusebox/fusebox/internal/demo"
)

// A circuit's runbook, set on its form, is linked on its page and said by
// the API; a link that is not a web address is refused with the reason.
func TestARunbookReachesThePageAndTheAPI(t *testing.T) {
	t.Parallel()
	srv, _ := apptest.Seeded(t)
	b := newBrowser(t, srv.URL)
	b.signIn("olivia")
	edit := "/circuits/" + demo.AppID + "/ProcessOrders/edit"
	form := func(rb string) url.Values {
		return url.Values{"_csrf": {b.csrf(edit)}, "threshold": {"100"}, "window": {"30s"}, "runbook_url": {rb}, "runbook_note": {"Check the inventory database first"}}
	}
	bad := b.post(edit, form("javascript:alert(1)"))
	wantStatus(t, bad, http.StatusUnprocessableEntity)
	if !strings.Contains(bad.body, "must be a web address starting with https://") {
		t.Errorf("the form does not say why the runbook link was refused:\n%s", section(bad.body, `id="runbook_url"`))
	}
	const link = "https://wiki.example.com/runbooks/orders"
	saved := form("  " + link + " ") // typed with spaces around it
	saved.Set("parking_queue", "orders-parked")
	wantStatus(t, b.post(edit, saved), http.StatusSeeOther)
	// The form shows again what was saved, trimmed: text settings travel
	// under their JSON names both ways.
	again := b.get(edit).body
	for id, want := range map[string]string{"runbook_url": link, "runbook_note": "Check the inventory database first", "parking_queue": "orders-parked"} {
		if input := section(again, `id="`+id+`"`); !strings.Contains(input, `value="`+want+`"`) {
			t.Errorf("the form does not show %s as saved (%q):\n%s", id, want, input)
		}
	}

	viewer := newBrowser(t, srv.URL)
	viewer.signIn("victor")
	page := viewer.get("/circuits/" + demo.AppID + "/ProcessOrders").body
	if shown := section(page, `data-testid="runbook"`); !strings.Contains(shown, `<a href="`+link+`"`) || !strings.Contains(shown, "Check the inventory database first") {
		t.Errorf("the circuit's page does not link its runbook:\n%s", shown)
	}
	api := viewer.get("/api/v1/circuits/" + demo.AppID + "/ProcessOrders")
	wantStatus(t, api, http.StatusOK)
	if !strings.Contains(api.body, `"runbook_url":"`+link+`"`) || !strings.Contains(api.body, `"runbook_note":"Check the inventory database first"`) {
		t.Errorf("the API does not say the runbook: %s", api.body)
	}
}
