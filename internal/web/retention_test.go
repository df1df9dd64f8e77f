package web_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/fusebox/fusebox/internal/amqphub/amqphubtest"
	"github.com/fusebox/fusebox/internal/apptest"
	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/demo"
	"github.com/fusebox/fusebox/internal/mailtest"
	"github.com/fusebox/fusebox/internal/testenv"
)

// While ProcessOrders is off, the events behind its checkpoints age
// toward the hub's 24 h retention. On a fake clock: the page counts down
// from the oldest waiting event (partition 1's, a minute old at the trip);
// its people are reminded a day, 6 h and 1 h ahead, each once, the last
// step escalating to the lead; once retention passes it, the page and a
// notice to both lists say how many are gone.
func TestRetentionRemindersComeAheadOfExpiry(t *testing.T) {
	t.Parallel()
	smtp := mailtest.Start(t)
	srv := apptest.StartWith(t, smtp.Env(), apptest.Options{RetentionEvery: 5 * time.Second})
	ctx := t.Context()
	t0 := srv.Clock.Now()
	if err := demo.Seed(ctx, srv.App.Store, t.TempDir()+"/local.settings.json", t0); err != nil {
		t.Fatal(err)
	}
	// Ten events a second on each partition; the oldest waiting event
	// (partition 1's) arrived a minute before t0.
	stream := demo.AgedStream(t0.Add(-time.Minute), 10, 24*time.Hour, srv.Clock.Now)
	ns := strings.ToLower(testenv.Prefix(t)) + ".servicebus.windows.net"
	if err := demo.SeedHostStorage(ctx, srv.App.Store, testenv.ConnectionString(t), t0, demo.HostSeed{HubAddr: amqphubtest.Serve(t, stream.Served()), Namespace: ns}); err != nil {
		t.Fatal(err)
	}
	ci, err := srv.App.Store.Circuits.Get(ctx, demo.AppID, "ProcessOrders")
	if err != nil {
		t.Fatal(err)
	}
	ci.HubRetention, ci.Recipients = 24*time.Hour, []string{"oncall@example.com"}
	ci.Escalate = circuit.Escalation{To: []string{"lead@example.com"}, After: 72 * time.Hour}
	ci.State, ci.Episode, ci.AppliedEpisode, ci.ChangedAt, ci.AppliedAt, ci.Reason = circuit.Open, ci.Episode+1, ci.Episode+1, t0, t0, "more than 50 failures in 1m"
	if err := srv.App.Store.Circuits.Put(ctx, ci); err != nil {
		t.Fatal(err)
	}

	viewer := newBrowser(t, srv.URL)
	viewer.signIn("victor")
	page := viewer.get("/circuits/" + demo.AppID + "/ProcessOrders").body
	if !strings.Contains(page, `data-testid="retention"`) || !strings.Contains(page, "The oldest waiting event arrived 1 min ago, on partition 1; the hub keeps events 24h, so they begin to expire in 24 h, at "+t0.Add(23*time.Hour+59*time.Minute).UTC().Format("Mon 2 Jan 15:04 MST")) {
		t.Fatalf("the circuit page does not count down to the first expiry:\n%s", section(page, `data-testid="host-insight"`))
	}
	if !strings.Contains(page, `<td data-testid="oldest">1 min ago</td><td data-testid="expires">in 24 h</td>`) {
		t.Errorf("partition 1's row does not show its oldest waiting event and expiry:\n%s", section(page, `data-testid="checkpoints"`))
	}

	api := viewer.get("/api/v1/circuits/" + demo.AppID + "/ProcessOrders/host")
	var host struct {
		Expires   time.Time `json:"expires"`
		Lost      int64     `json:"lost"`
		Hours     int       `json:"event_hub_retention_hours"`
		Positions []struct {
			Partition string
			Oldest    time.Time `json:"oldest_waiting"`
			Expires   time.Time `json:"expires"`
		}
	}
	if err := json.Unmarshal([]byte(api.body), &host); err != nil || len(host.Positions) != 4 {
		t.Fatalf("the host API: %v\n%s", err, api.body)
	}
	if want := t0.Add(24*time.Hour - time.Minute); !host.Expires.Equal(want) || host.Lost != 0 || host.Hours != 24 || host.Positions[1].Partition != "1" || !host.Positions[1].Oldest.Equal(t0.Add(-time.Minute)) || !host.Positions[1].Expires.Equal(want) {
		t.Errorf("the host API says %+v; want partition 1's oldest at %s, expiring at %s, none lost", host, t0.Add(-time.Minute), want)
	}

	// Each owed notice is waited for as the mail it becomes: the sender
	// runs on the fake clock, so the waits run inside RunFakeClock.
	mailed := func(to, subject string) mailtest.Message {
		t.Helper()
		stop := srv.RunFakeClock()
		defer stop()
		m, ok := smtp.WaitFor(func(m mailtest.Message) bool { return m.To == to && strings.Contains(m.Subject, subject) }, 20*time.Second)
		if !ok {
			t.Fatalf("no mail to %s saying %q within 20 s; got %v", to, subject, smtp.Messages())
		}
		return m
	}
	mailed("oncall@example.com", "Events begin to expire in 24 h")
	srv.Clock.Advance(18 * time.Hour) // 6 h less a minute left
	mailed("oncall@example.com", "Events begin to expire in 6 h")
	srv.Clock.Advance(5 * time.Hour) // an hour less a minute
	last := mailed("oncall@example.com", "Events begin to expire in 5")
	up := mailed("lead@example.com", "Escalated: events waiting for")
	if !containsAll(last.Text, "About ", " events wait behind its checkpoints", "on partition 1; the hub keeps events 24h", "/resume/") {
		t.Errorf("the last reminder does not say how many wait, where, or give the resume link:\n%s", last.Text)
	}
	if !strings.HasPrefix(up.Subject, "[Fusebox] Escalated: events waiting for") || !strings.Contains(up.Text, "you are told as its escalation list") {
		t.Errorf("the lead's mail: %s\n%s", up.Subject, up.Text)
	}
	for _, step := range []string{"expiring-24h", "expiring-6h", "expiring-1h"} {
		n := 0
		msgs, _ := srv.App.Store.Outbox.Recent(ctx, 200)
		for _, m := range msgs {
			if m.Kind == step {
				n++
			}
		}
		if n != 1 {
			t.Errorf("%d %s notices, want one", n, step)
		}
	}

	srv.Clock.Advance(2 * time.Hour) // partition 1's oldest passed retention an hour ago
	mailed("oncall@example.com", "events expired unread")
	mailed("lead@example.com", "events expired unread")
	viewer = newBrowser(t, srv.URL) // the first session ended with the day
	viewer.signIn("victor")
	page = viewer.get("/circuits/" + demo.AppID + "/ProcessOrders").body
	if !strings.Contains(page, `data-testid="events-expired"`) || strings.Contains(page, `data-testid="retention"`) && strings.Contains(page, "begin to expire in") {
		t.Errorf("after retention passed, the page does not say events were lost:\n%s", section(page, `data-testid="host-insight"`))
	}
}

// section is the part of a page from marker on, cut to a readable length.
func section(page, marker string) string {
	i := strings.Index(page, marker)
	if i < 0 {
		return fmt.Sprintf("(no %s on the page)", marker)
	}
	return page[i:min(len(page), i+3000)]
}

// containsAll reports whether s holds every one of parts.
func containsAll(s string, parts ...string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}
