package faulttest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fusebox/fusebox/internal/auth"
	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/demo"
	"github.com/fusebox/fusebox/internal/faulttest"
	"github.com/fusebox/fusebox/internal/mailtest"
	"github.com/fusebox/fusebox/internal/storage"
	"github.com/fusebox/fusebox/internal/switches/localsettings"
	"github.com/fusebox/fusebox/internal/tablestore"
	"github.com/fusebox/fusebox/internal/testenv"
)

// Short leases, so that a takeover takes seconds: contenders replace a
// holder whose record has not changed for 4 s; a holder stops working 3 s
// after its last successful renewal.
const (
	leaseDuration = 4 * time.Second
	renewDeadline = 3 * time.Second
	retryPeriod   = 500 * time.Millisecond
)

type rig struct {
	t        testing.TB
	env      map[string]string
	st       *storage.Store
	smtp     *mailtest.Server
	settings string
	token    string    // an operator's API token
	seeded   time.Time // when the demo was seeded: flips before it are its history
}

func newRig(t testing.TB) *rig { return newRigOn(t, testenv.ConnectionString(t)) }

// newRigOn seeds the demo into the storage account conn names.
func newRigOn(t testing.TB, conn string) *rig {
	t.Helper()
	prefix := testenv.Prefix(t)
	hashed, err := auth.HashPassword("correct horse battery")
	if err != nil {
		t.Fatal(err)
	}
	token, tokenHash := auth.NewAPIToken()
	smtp := mailtest.Start(t)
	r := &rig{t: t, smtp: smtp, token: token, settings: filepath.Join(t.TempDir(), "local.settings.json")}
	r.env = map[string]string{
		"FUSEBOX_ENV":                       "development",
		"FUSEBOX_STORAGE_CONNECTION_STRING": conn,
		"FUSEBOX_TABLE_PREFIX":              prefix,
		"FUSEBOX_SESSION_KEY":               "fleet-session-key-0123456789abcdef",
		"FUSEBOX_LOCAL_USERS":               "olivia:admin:" + hashed + ",bianca:operator@billing:" + hashed,
		"FUSEBOX_API_TOKENS":                "deploy-bot:operator:" + tokenHash,
		"FUSEBOX_SMTP_HOST":                 "127.0.0.1", "FUSEBOX_SMTP_PORT": strconv.Itoa(smtp.Port), "FUSEBOX_SMTP_TLS": "none",
		"FUSEBOX_MAIL_FROM":            "fusebox@example.com",
		"FUSEBOX_LEASE_DURATION":       leaseDuration.String(),
		"FUSEBOX_LEASE_RENEW_DEADLINE": renewDeadline.String(),
		"FUSEBOX_LEASE_RETRY_PERIOD":   retryPeriod.String(),
		"FUSEBOX_SHUTDOWN_GRACE":       "2s",
	}
	faulttest.RunDev(t, r.env, "seed-demo", "-local-settings", r.settings)
	r.seeded = time.Now()
	svc, err := tablestore.NewFromConnectionString(conn, tablestore.Options{Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	r.st = storage.New(svc)
	return r
}

func (r *rig) start(n int) []*faulttest.Instance {
	var out []*faulttest.Instance
	for i := range n {
		out = append(out, faulttest.Start(r.t, "instance-"+strconv.Itoa(i+1), r.env))
	}
	return out
}

// holder finds the instance holding a lease, waiting up to the timeout for
// one that is among want.
func (r *rig) holder(name string, want []*faulttest.Instance, timeout time.Duration) (*faulttest.Instance, int64) {
	r.t.Helper()
	var held *faulttest.Instance
	var generation int64
	testenv.Eventually(r.t, timeout, func() (bool, string) {
		rec, err := r.st.Leases.Get(r.t.Context(), name)
		if err == nil {
			for _, in := range want {
				if in.Holds(rec.Holder) {
					held, generation = in, rec.Generation
					return true, ""
				}
			}
		}
		return false, fmt.Sprintf("no instance among %d holds %s (record: %+v, %v)", len(want), name, rec, err)
	})
	return held, generation
}

func (r *rig) report(t *testing.T, in *faulttest.Instance, function string, count int) {
	t.Helper()
	body := `{"failures": [{"function": "` + function + `", "count": ` + strconv.Itoa(count) + `, "error": "inventory timeout"}]}`
	req, _ := http.NewRequest(http.MethodPost, in.URL+"/api/v1/failures", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+demo.Key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("failure report to %s: %d", in.Name, resp.StatusCode)
	}
}

func (r *rig) waitState(function string, want circuit.State, timeout time.Duration) circuit.Circuit {
	r.t.Helper()
	return r.waitCircuit(function, want.String()+" (and applied)", func(c circuit.Circuit) bool { return c.State == want && !c.Pending() }, timeout)
}

// waitCircuit polls the demo app's circuit until ok says it is as wanted,
// and fails the test after timeout.
func (r *rig) waitCircuit(function, want string, ok func(circuit.Circuit) bool, timeout time.Duration) circuit.Circuit {
	r.t.Helper()
	var c circuit.Circuit
	testenv.Eventually(r.t, timeout, func() (bool, string) {
		var err error
		c, err = r.st.Circuits.Get(r.t.Context(), demo.AppID, function)
		return err == nil && ok(c), fmt.Sprintf("%s not %s: %+v, %v", function, want, c, err)
	})
	return c
}

func (r *rig) opens(function string) []circuit.Flip {
	r.t.Helper()
	flips, err := r.st.Circuits.Flips(r.t.Context(), demo.AppID, function, 50)
	if err != nil {
		r.t.Fatal(err)
	}
	var out []circuit.Flip
	for _, f := range flips {
		if f.To == circuit.Open && f.At.After(r.seeded) { // not the demo's seeded history
			out = append(out, f)
		}
	}
	return out
}

func openMails(ms []mailtest.Message, function string) int {
	n := 0
	for _, m := range ms {
		if strings.Contains(m.Subject, function+" is open") {
			n++
		}
	}
	return n
}

// Three instances; the holder of the evaluator lease (the keeper of the
// books) is frozen (SIGSTOP) at whatever point of its cycle it is, then
// failures cross a threshold. The others trip the circuit once without
// waiting for the lease (TestAFrozenInstanceHoldsUpNoTripOrAlert measures
// how fast); one mail goes out; another instance takes the books over
// within the lease's time. When the frozen holder is woken it finds its
// lease gone, and nothing is tripped or mailed twice.
func TestAFrozenEvaluatorIsReplacedWithoutADoubleTrip(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	all := r.start(3)
	frozen, gen := r.holder("evaluator", all, 20*time.Second)
	var others []*faulttest.Instance
	for _, in := range all {
		if in != frozen {
			others = append(others, in)
		}
	}
	logFrom := frozen.LogLen()
	frozen.Freeze()
	frozenAt := time.Now()
	r.report(t, others[0], "ProcessOrders", 101)

	next, nextGen := r.holder("evaluator", others, 3*leaseDuration)
	takeover := time.Since(frozenAt)
	r.waitState("ProcessOrders", circuit.Open, 3*leaseDuration)
	tripped := time.Since(frozenAt)
	if off, _ := localsettings.Disabled(r.settings, "ProcessOrders"); !off {
		t.Error("the circuit is open but the trigger is on")
	}
	if nextGen <= gen {
		t.Errorf("the lease's generation went from %d to %d; a takeover must raise it", gen, nextGen)
	}
	// The contender waits for the record to stay unchanged for the lease's
	// duration, noticing on its next retry.
	if limit := leaseDuration + 2*retryPeriod + 2*time.Second; takeover > limit {
		t.Errorf("takeover %s after the freeze, want at most %s", takeover, limit)
	}
	t.Logf("frozen %s; %s took over after %s, the circuit was open and switched off after %s", frozen.Name, next.Name, takeover.Round(time.Millisecond), tripped.Round(time.Millisecond))
	r.smtp.WaitFor(func(m mailtest.Message) bool { return strings.Contains(m.Subject, "ProcessOrders is open") }, 20*time.Second)

	frozen.Thaw()
	if !frozen.WaitLog(t.Context(), logFrom, "lease lost", 3*leaseDuration) {
		t.Fatalf("the woken holder never noticed it lost its lease:\n%s", frozen.Log()[logFrom:])
	}
	// Give the woken process the chance to misbehave: it contends again and
	// must only ever wait, since the new holder renews; the new holder's
	// sender has meanwhile passed the outbox more than once.
	if !frozen.WaitLog(t.Context(), logFrom, "contending again", 3*leaseDuration) {
		t.Fatalf("the woken holder did not go back to contending:\n%s", frozen.Log()[logFrom:])
	}
	if h, _ := r.holder("evaluator", all, time.Second); h != next {
		t.Errorf("after the thaw %s holds the evaluator, want %s still", h.Name, next.Name)
	}
	if opens := r.opens("ProcessOrders"); len(opens) != 1 {
		t.Errorf("%d trips recorded, want 1: %+v", len(opens), opens)
	}
	if n := openMails(r.smtp.Messages(), "ProcessOrders"); n != 1 {
		t.Errorf("%d 'is open' mails, want 1", n)
	}
	if woken := frozen.Log()[logFrom:]; strings.Contains(woken, "fence") {
		t.Logf("the woken holder's writes were refused by the fence:\n%s", testenv.GrepLines(woken, "fence"))
	}
}

// Two operators press Resume at once on two instances, and a resume races
// a trip: each time exactly one of them changes the circuit, and the other
// is told why it did not.
func TestConcurrentOperatorsMakeOneTransitionEach(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	all := r.start(2)
	for round := range 3 {
		// SyncInventory is open in the demo; ImportPrices forced open.
		var wg sync.WaitGroup
		answers := make([]apiAnswer, 2)
		for i, in := range all {
			wg.Go(func() { answers[i] = r.action(t, in, "SyncInventory", "resume") })
		}
		wg.Wait()
		if ok := okCount(answers); ok != 1 {
			t.Fatalf("round %d: %d of 2 concurrent resumes succeeded, want 1: %+v", round, ok, answers)
		}
		for _, a := range answers {
			if a.status != http.StatusOK && (a.status != http.StatusConflict || a.message == "") {
				t.Errorf("round %d: the losing resume got %d %q, want 409 with a reason", round, a.status, a.message)
			}
		}
		c := r.waitState("SyncInventory", circuit.Closed, 10*time.Second)
		first := append([]apiAnswer(nil), answers...)

		// Now a trip and a resume at once on a closed circuit: the trip
		// wins or the resume finds nothing to resume; never both.
		wg = sync.WaitGroup{}
		wg.Go(func() { answers[0] = r.action(t, all[0], "SyncInventory", "trip") })
		wg.Go(func() { answers[1] = r.action(t, all[1], "SyncInventory", "resume") })
		wg.Wait()
		t.Logf("round %d: resumes answered %d %q and %d %q", round, first[0].status, first[0].message, first[1].status, first[1].message)
		t.Logf("round %d: trip answered %d, resume %d %q", round, answers[0].status, answers[1].status, answers[1].message)
		after, err := r.st.Circuits.Get(t.Context(), demo.AppID, "SyncInventory")
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case answers[0].status == http.StatusOK && answers[1].status == http.StatusOK:
			// Both may succeed only one after the other: trip, then resume.
			if after.Episode != c.Episode+2 || after.State != circuit.Closed {
				t.Errorf("round %d: both succeeded but the circuit is %s at episode %d (was %d)", round, after.State, after.Episode, c.Episode)
			}
		case answers[0].status == http.StatusOK:
			if after.Episode != c.Episode+1 || after.State != circuit.ForcedOpen || answers[1].message == "" {
				t.Errorf("round %d: trip won, resume said %d %q, circuit %s at %d", round, answers[1].status, answers[1].message, after.State, after.Episode)
			}
		default:
			t.Errorf("round %d: the trip of a closed circuit failed: %+v", round, answers[0])
		}
		// Open it again for the next round, through the API.
		if after.State == circuit.Closed {
			if a := r.action(t, all[0], "SyncInventory", "trip"); a.status != http.StatusOK {
				t.Fatalf("trip: %+v", a)
			}
		}
		r.waitState("SyncInventory", circuit.ForcedOpen, 10*time.Second)
	}
}

type apiAnswer struct {
	status  int
	message string
}

func (r *rig) action(t *testing.T, in *faulttest.Instance, function, action string) apiAnswer {
	req, _ := http.NewRequest(http.MethodPost, in.URL+"/api/v1/circuits/"+demo.AppID+"/"+function+"/"+action, strings.NewReader(`{"reason":"race test"}`))
	req.Header.Set("Authorization", "Bearer "+r.token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	resp, err := http.DefaultClient.Do(req.WithContext(ctx))
	if err != nil {
		t.Error(err)
		return apiAnswer{}
	}
	defer resp.Body.Close()
	var body struct {
		Message string `json:"message"`
		Error   string `json:"error"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&body)
	return apiAnswer{resp.StatusCode, body.Message + body.Error}
}

func okCount(as []apiAnswer) int {
	n := 0
	for _, a := range as {
		if a.status == http.StatusOK {
			n++
		}
	}
	return n
}
