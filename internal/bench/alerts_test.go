package bench_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fusebox/fusebox/internal/apptest"
	"github.com/fusebox/fusebox/internal/auth"
	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/demo"
	"github.com/fusebox/fusebox/internal/downstream"
	"github.com/fusebox/fusebox/internal/switches/localsettings"
	"github.com/fusebox/fusebox/internal/testenv"
)

// BenchmarkAlertToTriggersOff measures #57's figure on what lands today:
// an Azure Monitor alert received → every circuit naming its rule has its
// trigger off, with 20 circuits over 10 apps (each app its own settings
// file, switched as local apps are), on the real clock. Each round resumes
// them all first, untimed.
//
//	BENCH_ONLY="alert to triggers off" make bench
func BenchmarkAlertToTriggersOff(b *testing.B) {
	a := newAlertBench(b, []string{demo.AlertRule})
	a.run(b, func() {
		quoted := make([]string, len(a.ids))
		for i, id := range a.ids {
			quoted[i] = `"` + id + `"`
		}
		a.api(b, "/api/v1/circuits/resume", `{"circuits": [`+strings.Join(quoted, ",")+`], "reason": "next round"}`)
	})
}

// BenchmarkDownstreamAlertToTriggersOff is #57's figure itself: an Azure
// Monitor alert received → every member of the downstream naming its rule
// has its trigger off, 20 members over 10 apps (local switches, each app
// its own settings file), on the real clock; the members name no rule of
// their own. Each round resumes the downstream first, untimed.
//
//	BENCH_ONLY="downstream alert" make bench
func BenchmarkDownstreamAlertToTriggersOff(b *testing.B) {
	a := newAlertBench(b, nil)
	d := downstream.Downstream{Name: "inventory-db", Members: a.ids, Quorum: 0, Rules: []downstream.Rule{{ID: demo.AlertRule, Action: downstream.ActionTrip}}}
	if _, err := a.srv.App.Store.Downstreams.Create(context.Background(), d.WithDefaults()); err != nil {
		b.Fatal(err)
	}
	a.run(b, func() { a.api(b, "/api/v1/downstreams/inventory-db/resume", `{"reason": "next round"}`) })
}

// alertBench is 20 circuits over 10 local apps, each naming rules.
type alertBench struct {
	srv   *apptest.Server
	token string
	ids   []string
	files map[string]string
}

func newAlertBench(b *testing.B, rules []string) *alertBench {
	token, hash := auth.NewAPIToken()
	srv := apptest.StartRealClock(b, map[string]string{"FUSEBOX_AZURE_ALERTS_SECRET": demo.AlertsSecret, "FUSEBOX_API_TOKENS": "bench:admin:" + hash})
	ctx := context.Background()
	st := srv.App.Store
	dir := b.TempDir()
	a := &alertBench{srv: srv, token: token, files: map[string]string{}}
	for i := range 10 {
		app := fmt.Sprintf("app-%02d", i)
		file := filepath.Join(dir, app, "local.settings.json")
		if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(file, []byte(`{"IsEncrypted": false, "Values": {}}`), 0o600); err != nil {
			b.Fatal(err)
		}
		a.files[app] = file
		if err := st.Apps.Put(ctx, circuit.App{ID: app, Switch: circuit.SwitchLocal, LocalSettings: file}); err != nil {
			b.Fatal(err)
		}
		for f := range 2 {
			fn := fmt.Sprintf("F%d", f)
			if err := st.Circuits.Put(ctx, circuit.Circuit{AppID: app, Function: fn, Settings: circuit.Settings{Threshold: 100, Window: 30 * time.Second,
				AlertRules: rules}, State: circuit.Closed, ChangedAt: time.Now()}); err != nil {
				b.Fatal(err)
			}
			a.ids = append(a.ids, app+"/"+fn)
		}
	}
	return a
}

func (a *alertBench) allOff(b *testing.B, off bool) bool {
	cs, err := a.srv.App.Store.Circuits.List(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range cs {
		if c.State.TriggerOff() != off || c.Pending() {
			return false
		}
		if disabled, _ := localsettings.Disabled(a.files[c.AppID], c.Function); disabled != off {
			return false
		}
	}
	return len(cs) == 20
}

func (a *alertBench) api(b *testing.B, path, body string) {
	req, _ := http.NewRequest(http.MethodPost, a.srv.URL+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+a.token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b.Fatalf("%s: %d", path, resp.StatusCode)
	}
}

// run times, each round, the alert posted → all 20 triggers off and
// applied, and its answer; resume switches them back on first, untimed.
func (a *alertBench) run(b *testing.B, resume func()) {
	ctx := context.Background()
	wait := func(off bool) {
		testenv.Eventually(b, 30*time.Second, func() (bool, string) {
			return a.allOff(b, off), fmt.Sprintf("the 20 triggers are not all off=%v", off)
		})
	}
	var times, answers []time.Duration
	for b.Loop() {
		b.StopTimer()
		if a.allOff(b, true) {
			resume()
		}
		wait(false)
		b.StartTimer()
		t0 := time.Now()
		status, body, err := demo.PostAlert(ctx, a.srv.URL, demo.AlertPayload(demo.NewAlertID(), "Fired", time.Now(), time.Time{}))
		if err != nil || status != http.StatusAccepted {
			b.Fatalf("the alert: %d %s %v", status, body, err)
		}
		answers = append(answers, time.Since(t0)) // the 20 trips recorded
		wait(true)
		times = append(times, time.Since(t0))
	}
	b.ReportMetric(ms(percentile(times, 0.5)), "p50-ms")
	b.ReportMetric(ms(slices.Max(times)), "max-ms")
	b.ReportMetric(ms(percentile(answers, 0.5)), "answered-p50-ms")
	b.ReportMetric(ms(slices.Max(answers)), "answered-max-ms")
	b.ReportMetric(0, "ns/op")
}
