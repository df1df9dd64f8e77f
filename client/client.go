// Package client reports an Azure Function's failures to Fusebox from Go
// code (custom handlers, workers). It adds failures up locally per function
// and second, sends them in batches once a second, and keeps what could not
// be sent for the next try, with backoff.
//
// A batch that could not be delivered is sent again as it was, before any
// newer counts, with the same Idempotency-Key: if Fusebox stored it but
// the answer was lost, the retry does not count it twice.
//
//	r, err := client.New(client.Options{URL: "https://fusebox.example.com", Key: os.Getenv("FUSEBOX_KEY")})
//	go r.Run(ctx)
//	...
//	if err := process(batch); err != nil {
//		r.Failure("ProcessOrders", err)
//	}
package client

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"
)

// Options configure a Reporter.
type Options struct {
	URL string // Fusebox's base URL
	Key string // the app's key, fbx_<app>_<secret>
	// Interval between flushes. Default 1s.
	Interval time.Duration
	// MaxPending bounds how many (function, second) counts are kept while
	// Fusebox cannot be reached; the oldest are dropped beyond it. Default 10000.
	MaxPending int
	HTTPClient *http.Client
	// OnError is told about failed flushes and rejected items. Default: ignore.
	OnError func(error)
	// Now is the clock. Default time.Now.
	Now func() time.Time
	// Instance names this instance on the circuit page, so operators see
	// whether one instance fails or all. Default: WEBSITE_INSTANCE_ID (set
	// by App Service and Functions), else the host name.
	Instance string
}

// Reporter adds up failures and sends them.
type Reporter struct {
	o       Options
	mu      sync.Mutex
	pending map[key]*entry
	failed  *batch // a batch to send again, as it was, before new counts
	dropped int
	backoff time.Duration
}

type key struct {
	function string
	second   int64
}

type entry struct {
	count     int // failures
	successes int
	sample    string
}

// New checks the options.
func New(o Options) (*Reporter, error) {
	if o.URL == "" || !strings.HasPrefix(o.Key, "fbx_") {
		return nil, errors.New("client: URL and a key of the form fbx_<app>_<secret> are required")
	}
	if o.Interval <= 0 {
		o.Interval = time.Second
	}
	if o.MaxPending <= 0 {
		o.MaxPending = 10_000
	}
	if o.HTTPClient == nil {
		o.HTTPClient = &http.Client{Timeout: 10 * time.Second}
	}
	if o.OnError == nil {
		o.OnError = func(error) {}
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Instance == "" {
		o.Instance = os.Getenv("WEBSITE_INSTANCE_ID")
		if len(o.Instance) > 12 {
			o.Instance = o.Instance[:12] // the host's ids are 64 hex digits; the start tells them apart
		}
	}
	if o.Instance == "" {
		o.Instance, _ = os.Hostname()
	}
	o.URL = strings.TrimRight(o.URL, "/")
	return &Reporter{o: o, pending: map[key]*entry{}}, nil
}

// Failure records one failure of function now.
func (r *Reporter) Failure(function string, err error) {
	sample := ""
	if err != nil {
		sample = err.Error()
	}
	r.Failures(function, 1, r.o.Now(), sample)
}

// Failures records n failures of function at a time.
func (r *Reporter) Failures(function string, n int, at time.Time, sample string) {
	if n < 1 {
		return
	}
	r.add(function, at, n, 0, sample)
}

// Success records one successful call of function now. Circuits with a
// failure-ratio rule weigh failures against successes; the call costs a
// counter increment, and successes travel with the next flush.
func (r *Reporter) Success(function string) { r.Successes(function, 1, r.o.Now()) }

// Successes records n successful calls of function at a time.
func (r *Reporter) Successes(function string, n int, at time.Time) {
	if n < 1 {
		return
	}
	r.add(function, at, 0, n, "")
}

func (r *Reporter) add(function string, at time.Time, failures, successes int, sample string) {
	k := key{function, at.Unix()}
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.pending[k]
	if !ok {
		if len(r.pending) >= r.o.MaxPending {
			r.dropOldest()
		}
		e = &entry{}
		r.pending[k] = e
	}
	e.count += failures
	e.successes += successes
	if sample != "" {
		e.sample = sample
	}
}

func (r *Reporter) dropOldest() {
	var oldest key
	first := true
	for k := range r.pending {
		if first || k.second < oldest.second {
			oldest, first = k, false
		}
	}
	r.dropped += r.pending[oldest].count
	delete(r.pending, oldest)
}

// Dropped is how many failures were dropped because too many were pending.
func (r *Reporter) Dropped() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.dropped
}

// Run flushes every Interval (longer after failures) until ctx ends, then
// makes a last attempt with a short deadline.
func (r *Reporter) Run(ctx context.Context) error {
	for {
		wait := r.o.Interval
		r.mu.Lock()
		wait += r.backoff
		r.mu.Unlock()
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			last, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			err := r.Flush(last)
			cancel()
			return err
		case <-t.C:
		}
		if err := r.Flush(ctx); err != nil {
			r.o.OnError(err)
		}
	}
}

type item struct {
	Function  string `json:"function"`
	At        string `json:"at"`
	Count     int    `json:"count"`
	Successes int    `json:"successes,omitempty"`
	Error     string `json:"error,omitempty"`
}

// Flush sends what is pending. A batch that failed is kept as it was and
// sent first next time, under its Idempotency-Key; the next flush waits
// longer.
func (r *Reporter) Flush(ctx context.Context) error {
	r.mu.Lock()
	failed := r.failed
	r.mu.Unlock()
	if failed != nil {
		if err := r.deliver(ctx, *failed); err != nil {
			return err
		}
	}
	r.mu.Lock()
	pending := r.pending
	r.pending = map[key]*entry{}
	r.mu.Unlock()
	if len(pending) == 0 {
		return nil
	}
	b := batch{idempotencyKey: newKey(), items: make([]item, 0, len(pending))}
	for k, e := range pending {
		b.items = append(b.items, item{Function: k.function, At: time.Unix(k.second, 0).UTC().Format(time.RFC3339), Count: e.count, Successes: e.successes, Error: truncate(e.sample, 1024)})
	}
	return r.deliver(ctx, b)
}

// batch is one request's items and the key that makes its retries count once.
type batch struct {
	idempotencyKey string
	items          []item
}

// deliver sends a batch; a failure that may pass later keeps it for the
// next flush.
func (r *Reporter) deliver(ctx context.Context, b batch) error {
	retry, err := r.send(ctx, b)
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil && retry {
		r.failed = &b
		r.backoff = min(max(2*r.backoff, time.Second), 30*time.Second)
		return err
	}
	r.failed, r.backoff = nil, 0
	return err
}

func newKey() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// send posts a batch; retry says whether a failure may succeed later.
func (r *Reporter) send(ctx context.Context, b batch) (retry bool, err error) {
	items := b.items
	body, err := json.Marshal(map[string]any{"failures": items})
	if err != nil {
		return false, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.o.URL+"/api/v1/failures", bytes.NewReader(body))
	if err != nil {
		return false, err
	}
	req.Header.Set("Authorization", "Bearer "+r.o.Key)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", b.idempotencyKey)
	if r.o.Instance != "" {
		req.Header.Set("X-Fusebox-Instance", r.o.Instance)
	}
	resp, err := r.o.HTTPClient.Do(req)
	if err != nil {
		return true, fmt.Errorf("client: send failures: %w", err)
	}
	defer resp.Body.Close()
	text, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	switch {
	case resp.StatusCode == http.StatusAccepted:
		var res struct {
			Rejected []struct {
				Index int
				Error string
			}
		}
		if json.Unmarshal(text, &res) == nil && len(res.Rejected) > 0 {
			return false, fmt.Errorf("client: Fusebox rejected %d items, the first (%s): %s", len(res.Rejected), items[res.Rejected[0].Index].Function, res.Rejected[0].Error)
		}
		return false, nil
	case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500:
		return true, fmt.Errorf("client: Fusebox answered %d; will retry", resp.StatusCode)
	}
	return false, fmt.Errorf("client: Fusebox answered %d: %s; dropped %d counts", resp.StatusCode, strings.TrimSpace(string(text)), len(items))
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}
