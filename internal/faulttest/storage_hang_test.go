package faulttest_test

import (
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fusebox/fusebox/internal/demo"
	"github.com/fusebox/fusebox/internal/faulttest"
)

var csrfField = regexp.MustCompile(`name="_csrf" value="([^"]+)"`)

// visitor is a browser without JavaScript: cookies, no redirects followed.
type visitor struct {
	t    *testing.T
	base string
	c    *http.Client
}

func newVisitor(t *testing.T, base string) *visitor {
	jar, _ := cookiejar.New(nil)
	return &visitor{t: t, base: base, c: &http.Client{Jar: jar, Timeout: time.Minute,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

// answer is what came back and how long it took.
type answer struct {
	status int
	header http.Header
	body   string
	took   time.Duration
	err    error
}

func (v *visitor) send(req *http.Request) answer {
	start := time.Now()
	resp, err := v.c.Do(req)
	if err != nil {
		return answer{err: err, took: time.Since(start)}
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return answer{status: resp.StatusCode, header: resp.Header, body: string(b), took: time.Since(start)}
}

func (v *visitor) get(path string) answer {
	req, _ := http.NewRequest(http.MethodGet, v.base+path, nil)
	req.Header.Set("Accept", "text/html")
	return v.send(req)
}

func (v *visitor) postForm(path string, form url.Values) answer {
	req, _ := http.NewRequest(http.MethodPost, v.base+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "text/html")
	return v.send(req)
}

func (v *visitor) report(function string) answer {
	req, _ := http.NewRequest(http.MethodPost, v.base+"/api/v1/failures", strings.NewReader(`{"failures": [{"function": "`+function+`", "count": 1}]}`))
	req.Header.Set("Authorization", "Bearer "+demo.Key)
	req.Header.Set("Content-Type", "application/json")
	return v.send(req)
}

// signInForm fetches the sign-in page's CSRF field and returns the form
// that signs olivia in.
func (v *visitor) signInForm() url.Values {
	v.t.Helper()
	m := csrfField.FindStringSubmatch(v.get("/login").body)
	if m == nil {
		v.t.Fatal("no CSRF field on /login")
	}
	return url.Values{"_csrf": {m[1]}, "username": {"olivia"}, "password": {"correct horse battery"}, "next": {"/"}}
}

// Storage stops answering (Azurite SIGSTOPped: connections open, nothing
// said). Every request is answered within 5 s: a failure report 503 with
// Retry-After and nothing claimed, the overview a page saying storage is
// not answering, a sign-in an answer; the probes that need no storage
// answer at once. When storage answers again, everything goes on by
// itself. (Before the fix a report waited 46 s for its 503: three SDK
// tries of 15 s each.)
func TestAFrozenStorageCostsSecondsNotMinutes(t *testing.T) {
	t.Parallel()
	az := faulttest.StartAzurite(t)
	r := newRigOn(t, az.ConnectionString)
	in := r.start(1)[0]

	operator := newVisitor(t, in.URL)
	if a := operator.postForm("/login", operator.signInForm()); a.status != http.StatusSeeOther {
		t.Fatalf("sign-in before the outage: %d %v", a.status, a.err)
	}
	if a := operator.get("/"); a.status != http.StatusOK {
		t.Fatalf("overview before the outage: %d", a.status)
	}
	newcomer := newVisitor(t, in.URL)
	form := newcomer.signInForm()
	machine := newVisitor(t, in.URL)

	az.Freeze()
	answers := map[string]answer{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for name, do := range map[string]func() answer{
		"report":   func() answer { return machine.report("ProcessOrders") },
		"overview": func() answer { return operator.get("/") },
		"circuit":  func() answer { return operator.get("/circuits/" + demo.AppID + "/ProcessOrders") },
		"sign-in":  func() answer { return newcomer.postForm("/login", form) },
		"healthz":  func() answer { return machine.get("/healthz") },
	} {
		wg.Go(func() {
			a := do()
			mu.Lock()
			answers[name] = a
			mu.Unlock()
		})
	}
	wg.Wait()
	az.Thaw()

	for name, a := range answers {
		t.Logf("%s while storage hangs: %d after %s", name, a.status, a.took.Round(time.Millisecond))
		if a.err != nil {
			t.Errorf("%s: no answer: %v", name, a.err)
		}
		if a.took > 5*time.Second {
			t.Errorf("%s answered after %s, want within 5 s", name, a.took.Round(time.Millisecond))
		}
	}
	if a := answers["report"]; a.status != http.StatusServiceUnavailable || a.header.Get("Retry-After") == "" {
		t.Errorf("report: %d, Retry-After %q; want 503 with Retry-After", a.status, a.header.Get("Retry-After"))
	}
	for _, name := range []string{"overview", "circuit"} {
		if a := answers[name]; a.status != http.StatusServiceUnavailable || !strings.Contains(a.body, "Table Storage is not answering") {
			t.Errorf("%s: %d, want the 503 page saying storage is not answering:\n%.300s", name, a.status, a.body)
		}
	}
	if a := answers["sign-in"]; a.status != http.StatusServiceUnavailable {
		t.Errorf("sign-in: %d, want 503 (the session cannot be stored)", a.status)
	}
	if a := answers["healthz"]; a.status != http.StatusOK {
		t.Errorf("healthz: %d, want 200: the process is alive", a.status)
	}

	// Storage answers again: no restart, no operator. A connection the
	// outage left half-open may cost one failed try.
	var back answer
	for range 3 {
		if back = machine.report("ProcessOrders"); back.status == http.StatusAccepted {
			break
		}
	}
	if back.status != http.StatusAccepted {
		t.Errorf("a report after the outage: %d, want 202", back.status)
	}
	if a := operator.get("/"); a.status != http.StatusOK {
		t.Errorf("the overview after the outage: %d, want 200", a.status)
	}
	if a := newcomer.postForm("/login", newcomer.signInForm()); a.status != http.StatusSeeOther {
		t.Errorf("sign-in after the outage: %d, want 303", a.status)
	}
}
