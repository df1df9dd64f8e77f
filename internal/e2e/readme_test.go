package e2e_test

import (
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/fusebox/fusebox/internal/apptest"
	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/demo"
	"github.com/fusebox/fusebox/internal/jobs"
	"github.com/fusebox/fusebox/internal/switches/localsettings"
)

// TestTheREADMEsCommandsDoWhatItSays runs the README's curl commands as
// written, against a Fusebox seeded as `make run` seeds it (ProcessOrders
// with its throttle stage), only the address changed: the failure report
// trips ProcessOrders and switches its trigger off, and the ping is a run
// of the missing job. A README whose trip only throttled once passed
// every other test.
func TestTheREADMEsCommandsDoWhatItSays(t *testing.T) {
	t.Parallel()
	srv, settings := apptest.SeededRealClock(t)
	if err := demo.SeedThrottle(t.Context(), srv.App.Store, settings); err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	var trip, ping string
	for _, block := range regexp.MustCompile("(?s)```sh\n(.*?)```").FindAllStringSubmatch(string(readme), -1) {
		cmd := strings.ReplaceAll(block[1], "http://127.0.0.1:8080", srv.URL)
		switch {
		case strings.Contains(cmd, "/api/v1/failures") && strings.Contains(cmd, "ProcessOrders"):
			trip = cmd
		case strings.HasPrefix(cmd, "curl") && strings.Contains(cmd, "/ping/"):
			ping = cmd
		}
	}
	if trip == "" || ping == "" {
		t.Fatal("the README has no failure report of ProcessOrders or no ping command")
	}

	sh := func(cmd string) string {
		t.Helper()
		out, err := exec.CommandContext(t.Context(), "bash", "-c", cmd).CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", cmd, err, out)
		}
		return string(out)
	}
	t.Logf("the trip: %s", sh(trip))
	opened := waitState(t, srv, "ProcessOrders", "open and switched off", func(c circuit.Circuit) bool { return c.State == circuit.Open && !c.Pending() })
	if off, _ := localsettings.Disabled(settings, "ProcessOrders"); !off {
		t.Fatalf("the README's trip left the trigger on (%s %q)", opened.State, opened.Reason)
	}

	token := ping[strings.LastIndex(ping, "/ping/")+len("/ping/"):]
	token = strings.TrimSpace(token)
	job, err := srv.App.Store.Jobs.Get(t.Context(), "5f0c6a1e-7d1b-4c59-9a55-0d6c1e2b7a02") // Reminder mails, missing in the demo
	if err != nil {
		t.Fatal(err)
	}
	if job.PingToken != token {
		t.Fatalf("the README pings %q, which is not %s's ping key", token, job.Name)
	}
	before := time.Now()
	sh(ping)
	rs, _, err := srv.App.Store.Runs.Recent(t.Context(), job.ID, 1, jobs.RunCursor{})
	if err != nil || len(rs) != 1 || rs[0].Start.Before(before.Add(-time.Second)) {
		t.Fatalf("the README's ping stored no run of %s: %+v, %v", job.Name, rs, err)
	}
}
