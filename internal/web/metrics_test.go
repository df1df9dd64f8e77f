package web_test

import (
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"

	"github.com/fusebox/fusebox/internal/apptest"
	"github.com/fusebox/fusebox/internal/demo"
	"github.com/fusebox/fusebox/internal/testenv"
)

// waitMetrics scrapes url until every line in want is in the scrape and no
// line starts with a prefix in gone.
func waitMetrics(t *testing.T, url string, want, gone []string) string {
	t.Helper()
	var body string
	testenv.Eventually(t, 20*time.Second, func() (bool, string) {
		body = newBrowser(t, url).get("/metrics").body
		ok := true
		for _, w := range want {
			ok = ok && strings.Contains(body, "\n"+w+"\n")
		}
		for _, g := range gone {
			ok = ok && !strings.Contains(body, "\n"+g)
		}
		return ok, fmt.Sprintf("the scrape lacks %v or still has %v:\n%s", want, gone, testenv.GrepLines(body, "fusebox_"))
	})
	return body
}

// A second instance, which holds no lease, answers a scrape with the state
// the evaluator and the scanner stored: circuits by state, the open ones,
// trips and resumes by who made them, jobs by status.
func TestAnyInstanceExportsTheBreakersState(t *testing.T) {
	t.Parallel()
	srv, _ := apptest.Seeded(t)
	other := apptest.Start(t, map[string]string{"FUSEBOX_TABLE_PREFIX": srv.Config.Storage.TablePrefix})
	srv.Clock.Advance(30 * time.Second) // the loops' next passes see the demo

	waitMetrics(t, other.URL, []string{
		`fusebox_circuits{app="orders-demo",state="open"} 1`,
		`fusebox_circuits{app="orders-demo",state="forced-open"} 1`,
		`fusebox_jobs{status="missing"} 1`,
		`fusebox_job_down{job_slug="reminder-mails",name="Reminder mails",status="missing"} 1`,
		`fusebox_state_up 1`,
	}, []string{`fusebox_circuit_state_seconds{app="orders-demo",function="ProcessOrders"`})

	wantStatus(t, postJSON(t, srv.URL, demo.Key, `{"failures": [{"function": "ProcessOrders", "count": 101}]}`), http.StatusAccepted)
	srv.Clock.Advance(time.Second)
	waitOpen(t, srv, "ProcessOrders")
	srv.NextTick(t) // the books count the trip from the flip log on the keeper's next tick
	waitMetrics(t, other.URL, []string{`fusebox_circuit_trips_total{actor="evaluator",app="orders-demo"} 1`}, nil)
	srv.NextTick(t) // waitOpen saw the switch recorded, so its count is in this tick
	body := waitMetrics(t, other.URL, []string{
		`fusebox_circuits{app="orders-demo",state="open"} 2`,
		`fusebox_circuit_trips_total{actor="evaluator",app="orders-demo"} 1`,
	}, nil)
	if strings.Contains(body, "5f0c6a1e-") {
		t.Errorf("a job's id, which pinged it before ping tokens, is on /metrics:\n%s", testenv.GrepLines(body, "5f0c6a1e-"))
	}
	if !strings.Contains(body, "\n"+`fusebox_circuit_state_seconds{app="orders-demo",function="ProcessOrders",state="open"} `) {
		t.Errorf("no series for the open ProcessOrders:\n%s", testenv.GrepLines(body, "fusebox_circuit_state_seconds"))
	}
	// Switch calls are counted by the instance that made them (the one
	// the report woke), as counters per process are; the other made none.
	body = waitMetrics(t, srv.URL, []string{`fusebox_trigger_applies_total{outcome="ok",switch="local"} 1`}, nil)
	if !strings.Contains(body, `fusebox_trigger_apply_duration_seconds_count{switch="local"} 1`) {
		t.Errorf("no apply latency:\n%s", testenv.GrepLines(body, "apply_duration"))
	}
	if body := waitMetrics(t, other.URL, nil, nil); strings.Contains(body, `fusebox_trigger_applies_total{outcome="ok"`) {
		t.Errorf("the instance that switched nothing exports switch calls:\n%s", testenv.GrepLines(body, "applies_total"))
	}

	// An operator resumes it: a resume by an operator, and its series is gone.
	b := newBrowser(t, srv.URL)
	b.signIn("olivia")
	path := "/circuits/" + demo.AppID + "/ProcessOrders/resume"
	wantStatus(t, b.post(path, url.Values{"_csrf": {b.csrf(path)}, "reason": {"fixed the inventory timeout"}}), http.StatusSeeOther)
	srv.NextTick(t)
	waitMetrics(t, other.URL, []string{
		`fusebox_circuits{app="orders-demo",state="open"} 1`,
		`fusebox_circuit_resumes_total{actor="operator",app="orders-demo"} 1`,
		`fusebox_circuit_trips_total{actor="evaluator",app="orders-demo"} 1`,
	}, []string{`fusebox_circuit_state_seconds{app="orders-demo",function="ProcessOrders"`})
}

// Every metric the Grafana dashboard and the alert rules use is one that
// /metrics exports, so neither drifts from the code.
func TestDashboardAndAlertsUseExportedMetrics(t *testing.T) {
	t.Parallel()
	srv, _ := apptest.Seeded(t)
	// Let every family have a sample: a trip, its switch, an HTTP request.
	srv.Clock.Advance(30 * time.Second) // the scanner's next pass sees the demo's missing job
	wantStatus(t, postJSON(t, srv.URL, demo.Key, `{"failures": [{"function": "ProcessOrders", "count": 101}]}`), http.StatusAccepted)
	srv.Clock.Advance(time.Second)
	waitOpen(t, srv, "ProcessOrders")
	srv.NextTick(t)
	scrape := waitMetrics(t, srv.URL, []string{`fusebox_circuit_trips_total{actor="evaluator",app="orders-demo"} 1`, `fusebox_job_down{job_slug="reminder-mails",name="Reminder mails",status="missing"} 1`}, nil)
	// The trip's switch: once, or again when a stalled machine lost the
	// switch's lease before its record was written (the local switch is
	// idempotent); this test needs the family to have a sample.
	applied := regexp.MustCompile(`(?m)^fusebox_trigger_applies_total\{outcome="ok",switch="local"\} [1-9]`)
	testenv.Eventually(t, 20*time.Second, func() (bool, string) {
		if !applied.MatchString(scrape) {
			scrape = newBrowser(t, srv.URL).get("/metrics").body
		}
		return applied.MatchString(scrape), "no switch call counted:\n" + testenv.GrepLines(scrape, "fusebox_trigger_applies")
	})
	exported := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^# (?:HELP|TYPE) (fusebox_[a-z_]+)`).FindAllStringSubmatch(scrape, -1) {
		exported[m[1]] = true
	}
	_, here, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(here), "..", "..")
	for _, f := range []string{"deploy/grafana/fusebox.json", "deploy/prometheus/alerts.yaml"} {
		data, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		used := regexp.MustCompile(`fusebox_[a-z_]+[a-z]`).FindAllString(string(data), -1)
		if len(used) == 0 {
			t.Errorf("%s uses no Fusebox metric", f)
		}
		for _, name := range used {
			base := name
			for _, suffix := range []string{"_bucket", "_sum", "_count"} {
				if trimmed := strings.TrimSuffix(name, suffix); trimmed != name && exported[trimmed] {
					base = trimmed
				}
			}
			if !exported[base] {
				t.Errorf("%s uses %s, which /metrics does not export", f, name)
			}
		}
	}
	// What promtool check metrics says of the scrape: units as suffixes,
	// _total on counters, no label every target already has (job, instance).
	problems, err := promlint.New(strings.NewReader(scrape)).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		if strings.HasPrefix(p.Metric, "fusebox_") {
			t.Errorf("promlint: %s: %s", p.Metric, p.Text)
		}
	}
	// promlint does not check labels: Prometheus renames a target's own
	// job or instance label to exported_job, exported_instance.
	if m := regexp.MustCompile(`(?m)^fusebox_[a-z_]+\{(?:[^}]*,)?(job|instance)=.*$`).FindString(scrape); m != "" {
		t.Errorf("a series has a label every scrape target has: %s", m)
	}
	build := regexp.MustCompile(`(?m)^fusebox_build_info\{commit="[^"]+",goversion="go1\.[^"]+",version="([^"]+)"\} 1$`).FindStringSubmatch(scrape)
	if build == nil {
		t.Fatalf("no fusebox_build_info with version, commit and Go version:\n%s", testenv.GrepLines(scrape, "build_info"))
	}
	b := newBrowser(t, srv.URL)
	b.signIn("victor")
	// Read as a person does: "Fusebox · dev", not "Fuseboxdev".
	if footer := b.get("/").body; !regexp.MustCompile(`<footer>Fusebox\s*·\s*<span data-testid="version" title="commit `).MatchString(footer) || !strings.Contains(footer, `">`+build[1]+"</span>") {
		t.Errorf("the footer does not read Fusebox · %s:\n%s", build[1], footer[strings.Index(footer, "<footer>"):])
	}
}
