package web_test

import (
	"fmt"
	"maps"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/fusebox/fusebox/internal/apptest"
	"github.com/fusebox/fusebox/internal/auth"
	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/demo"
	"github.com/fusebox/fusebox/internal/mailtest"
	"github.com/fusebox/fusebox/internal/testenv"
)

// pauseServer is a seeded Fusebox with mail, an operator's token and
// FUSEBOX_PAUSE_EXPIRY as given.
func pauseServer(t *testing.T, expiry string) (*apptest.Server, apiClient, *mailtest.Server) {
	t.Helper()
	smtp := mailtest.Start(t)
	token, hash := auth.NewAPIToken()
	env := map[string]string{"FUSEBOX_API_TOKENS": "deploy-bot:operator:" + hash, "FUSEBOX_PAUSE_EXPIRY": expiry}
	maps.Copy(env, smtp.Env())
	srv := apptest.Start(t, env)
	if err := demo.Seed(t.Context(), srv.App.Store, t.TempDir()+"/local.settings.json", srv.Clock.Now()); err != nil {
		t.Fatal(err)
	}
	return srv, apiClient{t, newBrowser(t, srv.URL), token}, smtp
}

// windowBody is ProcessOrders' settings with an hour's retention on its
// hub and one pause window.
func windowBody(window string) string {
	return fmt.Sprintf(`{"threshold": 100, "window_seconds": 30, "recipients": ["oncall@example.com"], "event_hub": "orders", "event_hub_retention_hours": 1, "pause_windows": [%q]}`, window)
}

// A pause window twice as long as the hub keeps events is kept (warn),
// and the circuit's page says its events would expire; an hour before it
// opens the circuit's recipient is mailed so; when it opens the evaluator
// pauses the circuit, and when it ends resumes it. With
// FUSEBOX_PAUSE_EXPIRY=refuse, the same window is refused when saved.
func TestAPauseWindowPastTheRetentionIsWarnedOfBeforeItOpens(t *testing.T) {
	t.Parallel()
	srv, op, smtp := pauseServer(t, "warn")
	ctx := t.Context()
	opens := srv.Clock.Now().Truncate(time.Minute).Add(90 * time.Minute)
	window := opens.UTC().Format(time.RFC3339) + " for 2h"
	path := "/api/v1/circuits/" + demo.AppID + "/ProcessOrders"
	wantStatus(t, op.call(http.MethodPut, path, windowBody(window)), http.StatusOK)

	viewer := newBrowser(t, srv.URL)
	viewer.signIn("victor")
	page := viewer.get("/circuits/" + demo.AppID + "/ProcessOrders").body
	if got := section(page, `data-testid="next-pause"`); !strings.Contains(got, opens.UTC().Format("15:04")) || !strings.Contains(got, "expire before the trigger comes back on") {
		t.Errorf("the circuit's page does not warn of its next pause:\n%s", got)
	}
	if len(smtp.Messages()) > 0 {
		for _, m := range smtp.Messages() {
			if strings.Contains(m.Subject, "pauses at") {
				t.Fatalf("warned %s before the window opens, not within the hour: %s", opens.Sub(srv.Clock.Now()), m.Subject)
			}
		}
	}
	srv.Clock.Advance(35 * time.Minute) // 55 minutes before it opens
	stop := srv.RunFakeClock()
	warning, ok := smtp.WaitFor(func(m mailtest.Message) bool { return strings.Contains(m.Subject, "ProcessOrders pauses at") }, 20*time.Second)
	stop()
	if !ok {
		t.Fatalf("no warning within the hour before the window opens; got %v", smtp.Messages())
	}
	if !strings.Contains(warning.Subject, "waiting events would expire") || !strings.Contains(warning.Text, "its hub keeps events 1h") || warning.To != "oncall@example.com" {
		t.Errorf("the warning:\n%s\n%s", warning.Subject, warning.Text)
	}
	if c, _ := srv.App.Store.Circuits.Get(ctx, demo.AppID, "ProcessOrders"); c.State != circuit.Closed {
		t.Fatalf("paused before its window opened: %s (%s)", c.State, c.Reason)
	}

	srv.Clock.Advance(opens.Sub(srv.Clock.Now()))
	stop = srv.RunFakeClock()
	paused := srv.WaitCircuit(t, demo.AppID, "ProcessOrders", "paused by its window", func(c circuit.Circuit) bool { return c.State == circuit.ForcedOpen && !c.Pending() })
	stop()
	if !paused.PauseUntil.Equal(opens.Add(2*time.Hour)) || !strings.Contains(paused.Reason, "pause window "+window) {
		t.Errorf("paused until %s: %q", paused.PauseUntil, paused.Reason)
	}
	srv.Clock.Advance(opens.Add(2 * time.Hour).Sub(srv.Clock.Now()))
	stop = srv.RunFakeClock()
	defer stop()
	srv.WaitCircuit(t, demo.AppID, "ProcessOrders", "resumed when its window ended", func(c circuit.Circuit) bool {
		return c.State == circuit.Closed && strings.Contains(c.Reason, "the pause ended")
	})

	strict, strictOp, _ := pauseServer(t, "refuse")
	refused := strictOp.call(http.MethodPut, path, windowBody(strict.Clock.Now().Add(time.Hour).UTC().Format(time.RFC3339)+" for 2h"))
	if refused.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(refused.body, "pause_windows") || !strings.Contains(refused.body, "as long as the hub keeps events") {
		t.Errorf("with FUSEBOX_PAUSE_EXPIRY=refuse: %d %s", refused.StatusCode, refused.body)
	}
}

// A pause by hand as long as the hub keeps events is asked about: refused
// saying "pause anyway" unless the operator says so (expire_ok), and
// refused outright with FUSEBOX_PAUSE_EXPIRY=refuse.
func TestAPauseThatWouldLoseEventsIsAskedAbout(t *testing.T) {
	t.Parallel()
	srv, op, _ := pauseServer(t, "warn")
	path := "/api/v1/circuits/" + demo.AppID + "/ProcessOrders"
	wantStatus(t, op.call(http.MethodPut, path, windowBody("0 2 * * * for 30m")), http.StatusOK)
	asked := op.call(http.MethodPost, path+"/trip", `{"reason": "store migration", "for": "90m"}`)
	if asked.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(asked.body, "pause anyway") {
		t.Errorf("a 90m pause of a hub keeping 1h, unasked: %d %s", asked.StatusCode, asked.body)
	}
	wantStatus(t, op.call(http.MethodPost, path+"/trip", `{"reason": "store migration", "for": "90m", "expire_ok": true}`), http.StatusOK)
	c, err := srv.App.Store.Circuits.Get(t.Context(), demo.AppID, "ProcessOrders")
	if err != nil || c.State != circuit.ForcedOpen || !strings.Contains(c.Reason, "paused knowing waiting events expire") {
		t.Errorf("after pause anyway: %s %q %v", c.State, c.Reason, err)
	}

	strict, strictOp, _ := pauseServer(t, "refuse")
	wantStatus(t, strictOp.call(http.MethodPut, path, windowBody("0 2 * * * for 30m")), http.StatusOK)
	refused := strictOp.call(http.MethodPost, path+"/trip", `{"reason": "store migration", "for": "90m", "expire_ok": true}`)
	if refused.StatusCode != http.StatusUnprocessableEntity || strings.Contains(refused.body, "pause anyway") {
		t.Errorf("refuse mode, even asked: %d %s", refused.StatusCode, refused.body)
	}
	if c, _ := strict.App.Store.Circuits.Get(t.Context(), demo.AppID, "ProcessOrders"); c.State != circuit.Closed {
		t.Errorf("the refused pause left it %s", c.State)
	}
}

// A pause window opens and ends on the real clock: a one-off window two
// seconds ahead, a minute long (the shortest a window may be), pauses the
// circuit when it opens, holds it, and resumes it when it ends.
func TestAPauseWindowOpensAndEndsOnTheRealClock(t *testing.T) {
	t.Parallel()
	token, hash := auth.NewAPIToken()
	srv := apptest.StartRealClock(t, map[string]string{"FUSEBOX_API_TOKENS": "deploy-bot:operator:" + hash})
	if err := demo.Seed(t.Context(), srv.App.Store, t.TempDir()+"/local.settings.json", time.Now()); err != nil {
		t.Fatal(err)
	}
	op := apiClient{t, newBrowser(t, srv.URL), token}
	opens := time.Now().Add(2 * time.Second).Truncate(time.Second)
	body := fmt.Sprintf(`{"threshold": 100, "window_seconds": 30, "recipients": ["oncall@example.com"], "pause_windows": [%q]}`, opens.UTC().Format(time.RFC3339)+" for 1m")
	wantStatus(t, op.call(http.MethodPut, "/api/v1/circuits/"+demo.AppID+"/ProcessOrders", body), http.StatusOK)
	paused := srv.WaitCircuit(t, demo.AppID, "ProcessOrders", "paused by its window", func(c circuit.Circuit) bool { return c.State == circuit.ForcedOpen && !c.Pending() })
	if late := paused.ChangedAt.Sub(opens); late < 0 || late > 3*time.Second {
		t.Errorf("paused %s after the window opened", late)
	}
	if !paused.PauseUntil.Equal(opens.Add(time.Minute)) {
		t.Errorf("paused until %s, want %s", paused.PauseUntil, opens.Add(time.Minute))
	}
	testenv.Consistently(t, 2*time.Second, func() (bool, string) {
		c, _ := srv.App.Store.Circuits.Get(t.Context(), demo.AppID, "ProcessOrders")
		return c.State == circuit.ForcedOpen, "the window's pause ended early: " + c.State.String()
	})
	var resumed circuit.Circuit
	testenv.Eventually(t, 90*time.Second, func() (bool, string) {
		var err error
		if resumed, err = srv.App.Store.Circuits.Get(t.Context(), demo.AppID, "ProcessOrders"); err != nil {
			t.Fatal(err)
		}
		return resumed.State == circuit.Closed, "still " + resumed.State.String() + " a minute after the window opened"
	})
	if late := resumed.ChangedAt.Sub(opens.Add(time.Minute)); late < 0 || late > 3*time.Second || !strings.Contains(resumed.Reason, "the pause ended") {
		t.Errorf("resumed %s after the window ended: %q", late, resumed.Reason)
	}
	t.Logf("paused %s after the window opened, resumed %s after it ended", paused.ChangedAt.Sub(opens).Round(time.Millisecond), resumed.ChangedAt.Sub(opens.Add(time.Minute)).Round(time.Millisecond))
}

// A downstream's pause window is forecast member by member on its page:
// a member whose hub keeps events less than the window is marked; with
// FUSEBOX_PAUSE_EXPIRY=refuse the window is refused, naming the member.
func TestADownstreamsPauseWindowIsForecastMemberByMember(t *testing.T) {
	t.Parallel()
	for _, expiry := range []string{"warn", "refuse"} {
		srv, op, _ := pauseServer(t, expiry)
		ctx := t.Context()
		ci, err := srv.App.Store.Circuits.Get(ctx, demo.AppID, "ProcessOrders")
		if err != nil {
			t.Fatal(err)
		}
		ci.EventHub, ci.HubRetention = "orders", time.Hour
		if err := srv.App.Store.Circuits.UpdateSettings(ctx, ci); err != nil {
			t.Fatal(err)
		}
		body := fmt.Sprintf(`{"members": ["orders-demo/ProcessOrders", "orders-demo/SendReceipts"], "quorum": 0, "alert_rules": [], "channels": [], "recipients": [], "pause_windows": [%q]}`, "0 2 * * * for 2h")
		got := op.call(http.MethodPut, "/api/v1/downstreams/"+demo.Store, body)
		if expiry == "refuse" {
			if got.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(got.body, "as long as orders-demo/ProcessOrders's hub keeps events (1h)") {
				t.Errorf("refuse: %d %s", got.StatusCode, got.body)
			}
			continue
		}
		wantStatus(t, got, http.StatusOK)
		viewer := newBrowser(t, srv.URL)
		viewer.signIn("victor")
		page, _, _ := strings.Cut(section(viewer.get("/downstreams/"+demo.Store).body, `data-testid="downstream-next-pause-forecast"`), "</ul>")
		if !strings.Contains(page, "orders-demo/ProcessOrders: ") || !strings.Contains(page, "expire before the trigger comes back on") || strings.Contains(page, "SendReceipts") {
			t.Errorf("warn: the page's forecast, member by member:\n%s", page)
		}
	}
}
