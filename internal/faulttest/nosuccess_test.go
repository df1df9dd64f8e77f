package faulttest_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/demo"
)

// With the real clock: a circuit with the no-success rule and a 3 s window
// gets one failure a second and no success. Inside its first window it
// stays closed, however the failures pile up; once a whole window has
// passed without a success it trips, and the flip log says why.
func TestANoSuccessCircuitTripsAfterAWholeWindowOnTheRealClock(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	in := r.start(1)[0]
	req, _ := http.NewRequest(http.MethodPost, in.URL+"/api/v1/circuits",
		strings.NewReader(`{"app": "orders-demo", "function": "NightlyExport", "threshold": 100, "window_seconds": 3, "no_success": true}`))
	req.Header.Set("Authorization", "Bearer "+r.token)
	req.Header.Set("Content-Type", "application/json")
	// Taken before the request: the circuit is made some time before its
	// answer arrives (CI once saw 1.4 s), and its first window runs from
	// then, so no later instant may stand for it.
	created := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("create: %d", resp.StatusCode)
	}

	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	deadline := created.Add(20 * time.Second)
	for now := range tick.C {
		r.report(t, in, "NightlyExport", 1)
		c, err := r.st.Circuits.Get(t.Context(), demo.AppID, "NightlyExport")
		if err != nil {
			t.Fatal(err)
		}
		// The evaluator ticks once a second: a report 2 s into the window
		// has had a tick to trip on, and must not have.
		if since := now.Sub(created); since < 2500*time.Millisecond && c.State != circuit.Closed {
			t.Fatalf("tripped %s after creation, inside its first window: %q", since.Round(time.Millisecond), c.Reason)
		}
		if c.State == circuit.Open {
			t.Logf("tripped %s after creation", now.Sub(created).Round(time.Millisecond))
			if !strings.Contains(c.Reason, "no successful call in 3s (rule: no success for a whole window)") {
				t.Errorf("reason %q", c.Reason)
			}
			return
		}
		if now.After(deadline) {
			t.Fatalf("not tripped 20 s after creation: %s %q", c.State, c.Reason)
		}
	}
}
