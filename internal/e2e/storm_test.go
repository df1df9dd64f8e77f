package e2e_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/fusebox/fusebox/internal/apptest"
	"github.com/fusebox/fusebox/internal/auth"
	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/mailtest"
	"github.com/fusebox/fusebox/internal/switches/localsettings"
	"github.com/fusebox/fusebox/internal/testenv"
)

// TestStormResume (a short name: Chromium's socket path holds it) walks a
// storm on the real clock: a shared dependency fails, five circuits of one
// app trip together and their triggers go off; an operator sees it on the
// overview, resumes all five in one confirmed action with one reason, and
// each circuit gets its own flip, audit line, resume mail and trigger
// switched back on.
func TestStormResume(t *testing.T) {
	t.Parallel()
	smtp := mailtest.Start(t)
	srv := apptest.StartRealClock(t, smtp.Env())
	ctx := t.Context()
	settings := t.TempDir() + "/local.settings.json"
	const key = "fbx_storm_test-key-0123456789abcdef"
	if err := srv.App.Store.Apps.Put(ctx, circuit.App{ID: "storm", DisplayName: "Storm shop", Site: "func-storm", Switch: circuit.SwitchLocal,
		LocalSettings: settings, APIKeyHash: auth.HashAppKey(key)}); err != nil {
		t.Fatal(err)
	}
	var names []string
	var report strings.Builder
	for i := range 5 {
		fn := fmt.Sprintf("Sync%d", i+1)
		names = append(names, fn)
		if err := srv.App.Store.Circuits.Put(ctx, circuit.Circuit{AppID: "storm", Function: fn, Settings: circuit.Settings{Threshold: 5, Window: 30 * time.Second, Recipients: []string{"storm@example.com"}}, State: circuit.Closed, ChangedAt: time.Now().Add(-time.Minute)}); err != nil {
			t.Fatal(err)
		}
		if i > 0 {
			report.WriteString(",")
		}
		fmt.Fprintf(&report, `{"function": %q, "count": 6, "error": "inventory store offline"}`, fn)
	}
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/api/v1/failures", strings.NewReader(`{"failures": [`+report.String()+`]}`))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("failure report: %d", resp.StatusCode)
	}
	all := func(what string, ok func(circuit.Circuit) bool) map[string]circuit.Circuit {
		t.Helper()
		var got map[string]circuit.Circuit
		testenv.Eventually(t, 20*time.Second, func() (bool, string) {
			got = map[string]circuit.Circuit{}
			done := true
			for _, fn := range names {
				c, err := srv.App.Store.Circuits.Get(ctx, "storm", fn)
				if err != nil {
					t.Fatal(err)
				}
				got[fn] = c
				done = done && ok(c)
			}
			return done, fmt.Sprintf("the five circuits are not all %s: %+v", what, got)
		})
		return got
	}
	opened := all("open and switched off", func(c circuit.Circuit) bool { return c.State == circuit.Open && !c.Pending() })
	for _, fn := range names {
		if off, _ := localsettings.Disabled(settings, fn); !off {
			t.Fatalf("%s's trigger is on while its circuit is open", fn)
		}
	}

	p := newPage(t)
	p.signIn(t, srv.URL, "olivia")
	p.do(t, chromedp.Navigate(srv.URL+"/"), chromedp.WaitVisible(chromedp.CSS(`[data-testid="storm-resume-link"]`)))
	if got := p.text(t, `[data-testid="storm"]`); !strings.Contains(got, "5 circuits of Storm shop are off together") {
		t.Errorf("the overview says %q", got)
	}
	p.do(t, chromedp.Click(chromedp.CSS(`[data-testid="storm-resume-link"]`)), chromedp.WaitVisible(chromedp.CSS(`[data-testid="storm-form"]`)))
	picked, err := chromedp.Run(p.ctx, chromedp.Evaluate[int](`document.querySelectorAll('[data-testid="storm-circuits"] input[name="circuit"]:checked').length`))
	if err != nil || picked != 5 {
		t.Fatalf("%d circuits picked on the storm page (%v), want the five of the app", picked, err)
	}
	start := time.Now()
	p.do(t, chromedp.SendKeys(chromedp.CSS(`#reason`), "inventory store back"),
		chromedp.Click(chromedp.CSS(`[data-testid="storm-resume"]`)), chromedp.WaitVisible(chromedp.CSS(`[data-testid="storm-done"]`)))
	if got := p.text(t, `[data-testid="storm-done"]`); got != "Resumed 5 circuits" {
		t.Fatalf("the result says %q", got)
	}
	resumed := all("closed and switched on", func(c circuit.Circuit) bool { return c.State == circuit.Closed && !c.Pending() })
	t.Logf("five triggers back on %s after the press", time.Since(start).Round(time.Millisecond))
	for _, fn := range names {
		if resumed[fn].Episode != opened[fn].Episode+1 || !strings.Contains(resumed[fn].Reason, "inventory store back") {
			t.Errorf("%s: episode %d (%q), want its own flip to episode %d with the reason", fn, resumed[fn].Episode, resumed[fn].Reason, opened[fn].Episode+1)
		}
		if off, _ := localsettings.Disabled(settings, fn); off {
			t.Errorf("%s's trigger is still off after the resume", fn)
		}
		if _, ok := smtp.WaitFor(func(m mailtest.Message) bool {
			return strings.Contains(m.Subject, "Storm shop / "+fn+" resumed") && m.To == "storm@example.com"
		}, 20*time.Second); !ok {
			t.Errorf("no resume mail for %s within 20 s", fn)
		}
	}
	entries, err := srv.App.Store.Audit.Recent(ctx, time.Now(), 50)
	if err != nil {
		t.Fatal(err)
	}
	audited := map[string]bool{}
	for _, e := range entries {
		if e.Action == "resumed" && e.Actor == "olivia" {
			audited[e.Target] = true
		}
	}
	for _, fn := range names {
		if !audited["storm/"+fn] {
			t.Errorf("no audit line for resuming %s: %+v", fn, entries)
		}
	}
	if errs := p.errors(); len(errs) > 0 {
		t.Errorf("pages logged errors: %v", errs)
	}
}
