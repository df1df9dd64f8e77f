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
	token, hash := auth.NewAPIToken()
	srv := apptest.StartRealClock(b, map[string]string{"FUSEBOX_AZURE_ALERTS_SECRET": demo.AlertsSecret, "FUSEBOX_API_TOKENS": "bench:admin:" + hash})
	ctx := context.Background()
	st := srv.App.Store
	dir := b.TempDir()
	var ids []string
	files := map[string]string{}
	for a := range 10 {
		app := fmt.Sprintf("app-%02d", a)
		file := filepath.Join(dir, app, "local.settings.json")
		if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(file, []byte(`{"IsEncrypted": false, "Values": {}}`), 0o600); err != nil {
			b.Fatal(err)
		}
		files[app] = file
		if err := st.Apps.Put(ctx, circuit.App{ID: app, Switch: circuit.SwitchLocal, LocalSettings: file}); err != nil {
			b.Fatal(err)
		}
		for f := range 2 {
			fn := fmt.Sprintf("F%d", f)
			if err := st.Circuits.Put(ctx, circuit.Circuit{AppID: app, Function: fn, Settings: circuit.Settings{Threshold: 100, Window: 30 * time.Second,
				AlertRules: []string{demo.AlertRule}}, State: circuit.Closed, ChangedAt: time.Now()}); err != nil {
				b.Fatal(err)
			}
			ids = append(ids, app+"/"+fn)
		}
	}
	allOff := func(off bool) bool {
		cs, err := st.Circuits.List(ctx)
		if err != nil {
			b.Fatal(err)
		}
		for _, c := range cs {
			if c.State.TriggerOff() != off || c.Pending() {
				return false
			}
			if disabled, _ := localsettings.Disabled(files[c.AppID], c.Function); disabled != off {
				return false
			}
		}
		return len(cs) == 20
	}
	wait := func(off bool) {
		testenv.Eventually(b, 30*time.Second, func() (bool, string) {
			return allOff(off), fmt.Sprintf("the 20 triggers are not all off=%v", off)
		})
	}
	api := func(path, body string) {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
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
	var times, answers []time.Duration
	for b.Loop() {
		b.StopTimer()
		if allOff(true) {
			quoted := make([]string, len(ids))
			for i, id := range ids {
				quoted[i] = `"` + id + `"`
			}
			api("/api/v1/circuits/resume", `{"circuits": [`+strings.Join(quoted, ",")+`], "reason": "next round"}`)
		}
		wait(false)
		b.StartTimer()
		t0 := time.Now()
		status, body, err := demo.PostAlert(ctx, srv.URL, demo.AlertPayload(demo.NewAlertID(), "Fired", time.Now(), time.Time{}))
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
