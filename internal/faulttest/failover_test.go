package faulttest_test

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/demo"
	"github.com/fusebox/fusebox/internal/faulttest"
	"github.com/fusebox/fusebox/internal/mailtest"
	"github.com/fusebox/fusebox/internal/testenv"
)

// tripGoal is the goal: a trip, and its alert, within 3 s even
// while an instance is frozen.
const tripGoal = 3 * time.Second

// Three `fusebox serve` processes; each round freezes (SIGSTOP) the one
// doing the work at some point of it, trips a circuit through another, and
// wakes it. Every trigger is off, and every alert received, within 3 s of
// the report that crossed the threshold; nothing is tripped, switched or
// mailed twice. The local switch takes 500 ms per write here, as ARM's
// writes take time, so that a freeze can land in the middle of one.
//
//   - mid-tick: the keeper of the books, at a random point of its second;
//   - mid-apply: the instance that made the trip, the moment it logs it,
//     while it holds the app's switch claim and waits on the write;
//   - mid-send: the instance whose alert the mail server holds unanswered.
func TestAFrozenInstanceHoldsUpNoTripOrAlert(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.env["FUSEBOX_LOCAL_SWITCH_DELAY"] = "500ms"
	for _, f := range []string{"MidTick", "MidApply", "MidSendHeld", "MidSend"} {
		if err := r.st.Circuits.Put(t.Context(), circuit.Circuit{AppID: demo.AppID, Function: f, Settings: circuit.Settings{Threshold: 100, Window: 30 * time.Second, Recipients: []string{"oncall@example.com"}}}); err != nil {
			t.Fatal(err)
		}
	}
	all := r.start(3)
	other := func(not ...*faulttest.Instance) *faulttest.Instance {
		for _, in := range all {
			if !containsInstance(not, in) {
				return in
			}
		}
		t.Fatal("no other instance")
		return nil
	}
	// trip reports 101 failures of function to in and checks the trigger
	// and the alert, each within the goal of the report's answer.
	trip := func(in *faulttest.Instance, function string) {
		t.Helper()
		r.report(t, in, function, 101)
		sent := time.Now()
		off := testenv.WaitForFile(t, r.settings, `"AzureWebJobs.`+function+`.Disabled": "true"`, 20*time.Second)
		m, ok := r.smtp.WaitFor(func(m mailtest.Message) bool { return strings.Contains(m.Subject, function+" is open") }, 20*time.Second)
		if !ok {
			t.Fatalf("no alert for %s in 20 s", function)
		}
		t.Logf("%s: trigger off %s after the report, alert received %s after it", function, off.Sub(sent).Round(time.Millisecond), m.At.Sub(sent).Round(time.Millisecond))
		if off.Sub(sent) > tripGoal || m.At.Sub(sent) > tripGoal {
			t.Errorf("%s: trigger off after %s, alert after %s; want both within %s", function, off.Sub(sent), m.At.Sub(sent), tripGoal)
		}
	}

	// Mid-tick: the keeper of the books, at a random point of its second.
	keeper, _ := r.holder("evaluator", all, 20*time.Second)
	<-time.After(time.Duration(rand.Int64N(int64(time.Second)))) // where in the second: chosen, not waited on
	keeper.Freeze()
	trip(other(keeper), "MidTick")
	keeper.Thaw()

	// Mid-apply: whoever trips MidApply (most likely the instance the
	// report wakes) is frozen the moment it logs the trip: it has the
	// app's switch claim, or is taking it, and waits on the write.
	ctx, cancel := context.WithCancel(t.Context())
	tripper := make(chan *faulttest.Instance, len(all))
	for _, in := range all {
		from := in.LogLen()
		go func() {
			if in.WaitLog(ctx, from, `msg="circuit changed" circuit=`+demo.AppID+`/MidApply`, 20*time.Second) {
				in.Freeze()
				tripper <- in
			}
		}()
	}
	trip(all[rand.IntN(len(all))], "MidApply")
	cancel()
	applier := <-tripper
	t.Logf("mid-apply: froze %s", applier.Name)
	applier.Thaw()

	// Mid-send: the mail server takes MidSendHeld's alert and says
	// nothing; the instance sending it is frozen there. Another circuit's
	// alert goes out meanwhile through another instance.
	held := r.smtp.Hold("MidSendHeld is open")
	r.report(t, all[0], "MidSendHeld", 101)
	port, ok := held.Arrived(20 * time.Second)
	if !ok {
		t.Fatal("MidSendHeld's alert never reached the mail server")
	}
	var sender *faulttest.Instance
	for _, in := range all {
		if in.OwnsPort(port) {
			sender = in
		}
	}
	if sender == nil {
		t.Fatalf("no instance owns port %d", port)
	}
	sender.Freeze()
	t.Logf("mid-send: froze %s", sender.Name)
	trip(other(sender), "MidSend")
	held.Release()
	sender.Thaw()
	if _, ok := r.smtp.WaitFor(func(m mailtest.Message) bool { return strings.Contains(m.Subject, "MidSendHeld is open") }, 20*time.Second); !ok {
		t.Error("the held alert was not received after its sender woke")
	}

	// Nothing doubled: one trip and one alert per circuit, once every
	// woken instance has evaluated and sent again since waking.
	woke := time.Now()
	for _, in := range []*faulttest.Instance{keeper, applier, sender} {
		for _, loop := range []string{"evaluator", "mail_sender"} {
			passedSince(t, in, loop, woke.Add(time.Second))
		}
	}
	for _, in := range []*faulttest.Instance{keeper, applier, sender} {
		if refused := testenv.GrepLines(in.Log(), "fenced"); refused != "" {
			t.Logf("%s's late writes refused by a fence:\n%s", in.Name, refused)
		}
	}
	for _, f := range []string{"MidTick", "MidApply", "MidSendHeld", "MidSend"} {
		if opens := r.opens(f); len(opens) != 1 {
			t.Errorf("%s: %d trips recorded, want 1: %+v", f, len(opens), opens)
		}
		if n := openMails(r.smtp.Messages(), f); n != 1 {
			t.Errorf("%s: %d 'is open' mails, want 1", f, n)
		}
	}
}

func containsInstance(list []*faulttest.Instance, in *faulttest.Instance) bool {
	for _, x := range list {
		if x == in {
			return true
		}
	}
	return false
}

// passedSince waits (up to 20 s) until in's loop has finished a pass that
// started after t, as its /metrics say: it has had its chance to act.
func passedSince(t *testing.T, in *faulttest.Instance, loop string, t0 time.Time) {
	t.Helper()
	want := `fusebox_loop_last_success_timestamp_seconds{loop="` + loop + `"} `
	testenv.Eventually(t, 20*time.Second, func() (bool, string) {
		if resp, err := http.Get(in.URL + "/metrics"); err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			for _, line := range strings.Split(string(body), "\n") {
				if v, ok := strings.CutPrefix(line, want); ok {
					if f, err := strconv.ParseFloat(v, 64); err == nil && time.Unix(int64(f), 0).After(t0) {
						return true, ""
					}
				}
			}
		}
		return false, fmt.Sprintf("%s's %s loop has not passed since %s", in.Name, loop, t0.Format(time.TimeOnly))
	})
}
