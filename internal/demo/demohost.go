package demo

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"html/template"
	"log/slog"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue/queueerror"

	"github.com/fusebox/fusebox/internal/hostinsight"
	"github.com/fusebox/fusebox/internal/switches/localsettings"
	"github.com/fusebox/fusebox/internal/throttle"
)

// Host is a small stand-in for a function app with one Event Hubs
// triggered function, for `make run` and tests. What it copies from the
// real host (Microsoft.Azure.WebJobs.Extensions.EventHubs v5 and the
// Functions host):
//   - it reads AzureWebJobs.<name>.Disabled from local.settings.json once,
//     at start, as Core Tools does (run it under `fusebox local-host`);
//   - checkpoints are blobs {namespace}/{hub}/{consumer group}/checkpoint/
//     {partition} in azure-webjobs-eventhub with metadata sequencenumber
//     and offset, written after each batch; an enabled host claims every
//     partition at start in …/ownership/{partition} (metadata ownerid);
//   - a failing batch is tried again Retries times, as the function's
//     retry policy says (none unless set: the host's default), and then
//     checkpointed past, as the Event Hubs trigger does whether a batch
//     failed or not: its events are lost unless someone rewinds the
//     checkpoint (RetryForever is a policy of unlimited retries);
//   - the learned-concurrency snapshot is
//     azure-webjobs-hosts/concurrency/{hostId}/concurrencyStatus.json;
//   - the batch size is the host option set as an app setting,
//     AzureFunctionsJobHost__extensions__eventHubs__maxEventBatchSize,
//     read at start (what a throttle lowers).
//
// The event stream is simulated (see Stream): events keep arriving while
// the host is stopped and wait for it, as in a hub.
type Host struct {
	Settings   string // local.settings.json
	Function   string
	Blob       *azblob.Client
	HostID     string
	Namespace  string // e.g. orders-demo.servicebus.windows.net
	EventHub   string
	Group      string // consumer group
	Partitions int
	Rate       float64       // events per second per partition
	Epoch      time.Time     // when the simulated hub's partitions began
	Retention  time.Duration // the simulated hub's; zero keeps every event
	Batch      int           // events per batch; default 50
	// Offline is a file whose existence means the downstream store is
	// offline: every batch fails. It survives restarts, as an outage does.
	Offline string
	// Throttling is a file whose existence means the downstream store is
	// overloaded: it answers 429 to a batch of more than Bears events
	// (default 20), as a store does to a request larger than its budget,
	// and the batch is retried from the same checkpoint. Smaller batches
	// pass: less pressure, not none, is what it needs.
	Throttling string
	Bears      int
	Processed  func(partition int, seq int64) // told of each event handled
	// Retries is how many times a failed batch is tried again before the
	// host checkpoints past it; RetryForever never gives up.
	Retries int
	// Ledger, when set, counts how many times each event was processed,
	// for the page.
	Ledger   *Ledger
	Reporter Reporter // tells Fusebox of failures and successes
	// Alerts, if set, lets the page post Azure Monitor's alert on the
	// orders store to Fusebox's secure webhook, signed as the demo's
	// tenant (AlertSigner), and serves the tenant's keys.
	Alerts *HostAlerts
	Logger *slog.Logger
	// Corrupt is a file whose existence means the next event on partition
	// 0 is corrupt: the function fails on it, and after ParkAfter tries it
	// parks the event on Parking and goes on, as the seed's pattern says.
	Corrupt string
	Parking *azqueue.QueueClient
	// Orders is the app's queue-triggered function, when it has one.
	Orders *OrderQueue

	mu       sync.Mutex
	disabled bool
	off      map[string]bool
	tries    int // of the corrupt event
	parked   int
	cps      []int64 // last checkpointed sequence per partition, -1: none
	failures int
	failed   map[int]int // failed tries of each partition's current batch
	skipped  int64       // events checkpointed past after their batch failed
}

// RetryForever is a retry policy that tries a failed batch until it
// succeeds.
const RetryForever = -1

// Reporter tells Fusebox how batches went: client.Reporter (the failure
// API) or Telemetry (OpenTelemetry, as the real host exports).
type Reporter interface {
	Failures(function string, n int, at time.Time, sample string)
	Successes(function string, n int, at time.Time)
}

// Stream is the simulated hub the host consumes.
func (h *Host) Stream() Stream {
	return Stream{Name: h.EventHub, Partitions: h.Partitions, Rate: h.Rate, Epoch: h.Epoch, Retention: h.Retention}
}

// Head is the last sequence number of each partition at now.
func (h *Host) Head(now time.Time) int64 { return h.Stream().Head(now) }

// Start reads the settings and the checkpoints. A disabled function does
// not consume: its checkpoints stay where they are.
func (h *Host) Start(ctx context.Context) error {
	if h.Batch <= 0 {
		h.Batch = 50
	}
	if h.Bears <= 0 {
		h.Bears = 20
	}
	settings, err := localsettings.Settings(h.Settings)
	if err != nil {
		return err
	}
	if n, err := strconv.Atoi(settings[throttle.EventHubMaxBatch]); err == nil && n >= 1 {
		h.Batch = n // the host option overrides the default, as in host.json
	}
	if h.Logger == nil {
		h.Logger = slog.New(slog.DiscardHandler)
	}
	off, err := localsettings.DisabledFunctions(h.Settings)
	if err != nil {
		return err
	}
	h.disabled, h.off = off[h.Function], off
	if h.Parking != nil {
		if _, err := h.Parking.Create(ctx, nil); err != nil && !queueerror.HasCode(err, queueerror.QueueAlreadyExists) {
			return fmt.Errorf("demo host: create the parking queue: %w", err)
		}
	}
	if h.Orders != nil {
		if err := h.Orders.Start(ctx); err != nil {
			return err
		}
	}
	for _, name := range []string{hostinsight.EventHubContainer, hostinsight.HostsContainer} {
		if _, err := h.Blob.CreateContainer(ctx, name, nil); err != nil && !bloberror.HasCode(err, bloberror.ContainerAlreadyExists) {
			return err
		}
	}
	r := hostinsight.NewReader(h.Blob, h.HostID)
	cps, _, err := r.Checkpoints(ctx)
	if err != nil {
		return err
	}
	h.cps = make([]int64, h.Partitions)
	for i := range h.cps {
		h.cps[i] = -1
	}
	for _, c := range cps {
		if c.Namespace != h.Namespace || c.Hub != h.EventHub || c.ConsumerGroup != h.Group || !c.HasSequence {
			continue
		}
		if p, err := strconv.Atoi(c.Partition); err == nil && p >= 0 && p < h.Partitions {
			h.cps[p] = c.Sequence
		}
	}
	if h.Ledger != nil {
		first := h.Stream().First(time.Now())
		for p, cp := range h.cps {
			if err := h.Ledger.Start(p, max(cp+1, first)); err != nil {
				return err
			}
		}
	}
	if !h.disabled {
		// The processor claims each partition by writing its id into the
		// ownership blob, as the Event Hubs processor does on start.
		owner := fmt.Sprintf("demo-host-%d", os.Getpid())
		for p := range h.Partitions {
			name := fmt.Sprintf("%s/%s/%s/ownership/%d", h.Namespace, h.EventHub, h.Group, p)
			if _, err := h.Blob.UploadBuffer(ctx, hostinsight.EventHubContainer, name, nil,
				&azblob.UploadBufferOptions{Metadata: map[string]*string{"ownerid": &owner}}); err != nil {
				return fmt.Errorf("demo host: claim partition %d: %w", p, err)
			}
		}
	}
	// Dynamic concurrency covers Blob, Queue and Service Bus triggers, not
	// Event Hubs: the snapshot holds the queue-triggered function alone.
	learned := ""
	if h.Orders != nil {
		learned = fmt.Sprintf(`"Demo.Functions.%s":{"Concurrency":8}`, h.Orders.Function)
	}
	snapshot := fmt.Sprintf(`{"Timestamp":%q,"NumberOfCores":2,"FunctionSnapshots":{%s}}`, time.Now().UTC().Format(time.RFC3339), learned)
	if _, err := h.Blob.UploadBuffer(ctx, hostinsight.HostsContainer, "concurrency/"+h.HostID+"/concurrencyStatus.json", []byte(snapshot), nil); err != nil {
		return err
	}
	h.Logger.Info("demo host started", "function", h.Function, "disabled", h.disabled, "checkpoints", h.cps)
	return nil
}

// BatchSize is the most events a batch holds, as read at start.
func (h *Host) BatchSize() int { h.mu.Lock(); defer h.mu.Unlock(); return h.Batch }

// Failures are the failed attempts of the Event Hubs function so far.
func (h *Host) Failures() int { h.mu.Lock(); defer h.mu.Unlock(); return h.failures }

// Disabled reports whether the function was disabled when the host started.
func (h *Host) Disabled() bool { h.mu.Lock(); defer h.mu.Unlock(); return h.disabled }

// ParkAfter is how many times the Event Hubs function tries a corrupt
// event before it parks it.
const ParkAfter = 3

// Step processes one batch per partition that has events waiting, and
// the queue-triggered function's visible messages.
func (h *Host) Step(ctx context.Context, now time.Time) error {
	var orders error
	if h.Orders != nil && !h.off[h.Orders.Function] {
		orders = h.Orders.Step(ctx, now)
	}
	if h.Disabled() {
		return orders
	}
	return errors.Join(orders, h.stepEvents(ctx, now))
}

func (h *Host) stepEvents(ctx context.Context, now time.Time) error {
	head, first := h.Head(now), h.Stream().First(now)
	offline, throttling := exists(h.Offline), exists(h.Throttling)
	var errs []error
	for p := range h.Partitions {
		h.mu.Lock()
		// A checkpoint older than the hub's retention resumes at the first
		// event still held: the receiver asks for events after the
		// checkpoint's sequence number, and the expired ones are gone.
		from := max(h.cps[p]+1, first)
		h.mu.Unlock()
		if from > head {
			continue
		}
		to := min(head, from+int64(h.Batch)-1)
		n := int(to - from + 1)
		if offline || throttling && n > h.Bears {
			// The function throws. The retry policy tries the same batch
			// again on the next step; once it gives up, the trigger
			// checkpoints past the batch, and its events are not processed.
			sample := "downstream store offline"
			if !offline {
				sample = fmt.Sprintf("429 Too Many Requests: the store takes at most %d events a request", h.Bears)
			}
			h.mu.Lock()
			h.failures += n
			if h.failed == nil {
				h.failed = map[int]int{}
			}
			h.failed[p]++
			giveUp := h.Retries != RetryForever && h.failed[p] > h.Retries
			if giveUp {
				h.failed[p] = 0
				h.skipped += int64(n)
			}
			h.mu.Unlock()
			if h.Reporter != nil {
				h.Reporter.Failures(h.Function, n, now, sample)
			}
			if giveUp {
				if err := h.checkpoint(ctx, p, to); err != nil {
					errs = append(errs, err)
				}
			}
			continue
		}
		h.mu.Lock()
		delete(h.failed, p)
		h.mu.Unlock()
		skip := int64(-1)
		if p == 0 && h.Parking != nil && exists(h.Corrupt) {
			h.mu.Lock()
			h.tries++
			tries := h.tries
			h.mu.Unlock()
			if tries < ParkAfter {
				if h.Reporter != nil {
					h.Reporter.Failures(h.Function, 1, now, "corrupt event")
				}
				continue // the batch is tried again from the same checkpoint
			}
			// Given up on: parked, so the stream goes on.
			body := fmt.Sprintf(`{"partition":%d,"sequence":%d,"reason":"corrupt payload: the function failed %d times"}`, p, from, tries)
			if _, err := h.Parking.EnqueueMessage(ctx, body, nil); err != nil {
				errs = append(errs, err)
				continue
			}
			_ = os.Remove(h.Corrupt)
			h.mu.Lock()
			h.tries, h.parked = 0, h.parked+1
			h.mu.Unlock()
			h.Logger.Info("demo event parked", "partition", p, "sequence", from)
			skip = from
		}
		for seq := from; seq <= to; seq++ {
			if h.Processed != nil && seq != skip {
				h.Processed(p, seq)
			}
		}
		if h.Ledger != nil {
			if err := h.Ledger.Done(p, from, to); err != nil {
				errs = append(errs, err)
			}
		}
		if err := h.checkpoint(ctx, p, to); err != nil {
			errs = append(errs, err)
			continue
		}
		if h.Reporter != nil {
			h.Reporter.Successes(h.Function, n, now)
		}
	}
	return errors.Join(errs...)
}

func (h *Host) checkpoint(ctx context.Context, p int, seq int64) error {
	s, o := strconv.FormatInt(seq, 10), strconv.FormatInt(seq*256, 10)
	name := fmt.Sprintf("%s/%s/%s/checkpoint/%d", h.Namespace, h.EventHub, h.Group, p)
	if _, err := h.Blob.UploadBuffer(ctx, hostinsight.EventHubContainer, name, nil,
		&azblob.UploadBufferOptions{Metadata: map[string]*string{"sequencenumber": &s, "offset": &o}}); err != nil {
		return fmt.Errorf("demo host: checkpoint partition %d: %w", p, err)
	}
	h.mu.Lock()
	h.cps[p] = seq
	h.mu.Unlock()
	return nil
}

// Run steps every interval until ctx ends.
func (h *Host) Run(ctx context.Context, every time.Duration) error {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case now := <-t.C:
			if err := h.Step(ctx, now); err != nil {
				h.Logger.Warn("demo host step", "error", err)
			}
		}
	}
}

var hostPage = template.Must(template.New("h").Parse(`<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><meta http-equiv="refresh" content="2">
<title>Demo function host</title><style>body{font-family:system-ui,sans-serif;max-width:44rem;margin:2rem auto;color:#1d2330}td,th{padding:.2rem .8rem;text-align:right}form{display:inline-block;margin:.2rem .4rem .2rem 0}</style></head>
<body><h1>Demo function host: {{.Function}}</h1>
<p>Trigger {{if .Disabled}}<strong>disabled</strong> (read from local.settings.json at start): not consuming; checkpoints stay put{{else}}enabled: consuming{{end}}.
Batch size: {{.Batch}} events (maxEventBatchSize, read at start).
Downstream store: <strong data-testid="store">{{if .Offline}}offline — every batch fails and is retried{{else if .Throttling}}overloaded — it answers 429 to batches of more than {{.Bears}} events{{else}}online{{end}}</strong>.</p>
<form method="post" action="/downstream"><button type="submit">{{if .Offline}}Bring the downstream store back{{else}}Take the downstream store offline{{end}}</button></form>
{{if .CanThrottle}}<form method="post" action="/throttling"><button type="submit" data-testid="throttling">{{if .Throttling}}Let the store take any batch again{{else}}Overload the store (429 above {{.Bears}} events a batch){{end}}</button></form>{{end}}
{{if .CanPark}}<form method="post" action="/corrupt"><button type="submit" data-testid="corrupt">Send a corrupt event</button></form>
<p>A corrupt event fails {{.ParkAfter}} times, then the function parks it in <code>{{.Parking}}</code> and goes on. Parked so far: {{.Parked}}.</p>{{end}}
<p>A failed batch is {{if eq .Retries -1}}tried again until it succeeds (a retry policy without limit){{else if eq .Retries 0}}not tried again (no retry policy, the host's default){{else}}tried again {{.Retries}} times{{end}}{{if ne .Retries -1}}, then the trigger checkpoints past it: its events are not processed unless the checkpoint is moved back{{end}}.</p>
<table><tr><th>Partition</th><th>Last event</th><th>Checkpoint</th><th>Waiting</th>{{if .Ledger}}<th>Processed once</th><th>More than once</th><th>Never</th>{{end}}</tr>
{{range .Rows}}<tr><td>{{.P}}</td><td>{{.Head}}</td><td>{{.CP}}</td><td>{{.Waiting}}</td>{{if $.Ledger}}<td>{{.Once}}</td><td>{{.More}}</td><td>{{.Never}}</td>{{end}}</tr>{{end}}</table>
<p>Failed attempts so far: {{.Failures}}; events checkpointed past after their batch failed: {{.Skipped}}.</p>
{{if .Ledger}}<p data-testid="ledger">Of the events up to the checkpoints, <span data-testid="ledger-once">{{.Once}}</span> were processed once, <span data-testid="ledger-more">{{.More}}</span> more than once and <strong data-testid="ledger-never">{{.Never}}</strong> never.</p>{{end}}
{{with .Orders}}<h2>{{.Function}} (queue-triggered, <code>{{.Queue}}</code>)</h2>
<p>Trigger {{if .Off}}<strong>disabled</strong>{{else}}enabled{{end}}. Order parser: <strong data-testid="parser" data-fixed="{{.Fixed}}">{{if .Fixed}}fixed{{else}}fails on sku BROKEN{{end}}</strong>.
Tries that failed: {{.Failures}}; orders handled: <span data-testid="orders-done">{{.Done}}</span>; set aside in <code>{{.Queue}}-poison</code> after 5 tries: {{.Poisoned}}.</p>
<form method="post" action="/poison"><button type="submit" data-testid="send-poison">Send a poison message</button></form>
<form method="post" action="/fix"><button type="submit" data-testid="fix">{{if .Fixed}}Break the parser again{{else}}Fix the parser{{end}}</button></form>{{end}}
{{if .Alerts}}<h2>Azure Monitor: orders-store-down</h2>
<p>The metric alert on the orders store, posted to Fusebox's secure webhook as an action group does, with a token the demo's tenant signs. Fired trips every function of the <code>orders-store</code> downstream at once; resolved waits for the store's health (<code>/health/orders-store</code>, 503 while the store is offline) to answer well 3 times in a row, then tries them.</p>
<form method="post" action="/alert/fired"><button type="submit" data-testid="alert-fired">The alert fires</button></form>
<form method="post" action="/alert/resolved"><button type="submit" data-testid="alert-resolved">The alert resolves</button></form>
{{with .AlertSaid}}<p data-testid="alert-said">{{.}}</p>{{end}}{{end}}
</body></html>`))

// HostAlerts posts the demo's alert from the host's page.
type HostAlerts struct {
	Fusebox string // its base URL
	Signer  *AlertSigner
	State   AlertState
	Logger  *slog.Logger
	Now     func() time.Time // nil: the real clock

	mu   sync.Mutex
	last string // what Fusebox answered the last post, for the page
}

func (a *HostAlerts) said() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.last
}

// post posts the alert's condition ("fired" or "resolved") and keeps
// Fusebox's answer (its status and what it acted on) for the page.
func (a *HostAlerts) post(ctx context.Context, condition string) {
	condition = strings.ToUpper(condition[:1]) + condition[1:]
	now := time.Now()
	if a.Now != nil {
		now = a.Now()
	}
	said := ""
	id, fired, err := a.State.Next(condition, now)
	if err == nil {
		var token string
		if token, err = a.Signer.Token(now); err == nil {
			var status int
			var body string
			status, body, err = PostSecureAlert(ctx, a.Fusebox, token, AlertPayload(id, condition, fired, now))
			said = fmt.Sprintf("%s: Fusebox answered %d %s", condition, status, strings.TrimSpace(body))
		}
	}
	if err != nil {
		a.Logger.Warn("demo alert", "condition", condition, "error", err)
		said = condition + ": not posted: " + err.Error()
	}
	a.mu.Lock()
	a.last = said
	a.mu.Unlock()
}

// ServeHTTP shows the host's state, toggles the downstream outage and the
// parser's fix, and sends poison messages and corrupt events.
func (h *Host) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h.Alerts != nil && r.URL.Path == AlertKeysPath && r.Method == http.MethodGet {
		h.Alerts.Signer.Keys(w, r)
		return
	}
	if r.URL.Path == HealthPath && r.Method == http.MethodGet {
		// The orders store's health, as its own endpoint would say it:
		// the demo's downstream probe calls it.
		if exists(h.Offline) {
			http.Error(w, "the orders store is offline", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok\n"))
		return
	}
	if r.Method == http.MethodPost {
		// A local demo page: refuse cross-site posts all the same.
		if o := r.Header.Get("Origin"); o != "" && o != "http://"+r.Host {
			http.Error(w, "cross-site request refused", http.StatusForbidden)
			return
		}
		var err error
		switch {
		case r.URL.Path == "/downstream" && exists(h.Offline):
			err = os.Remove(h.Offline)
		case r.URL.Path == "/downstream":
			err = os.WriteFile(h.Offline, []byte("offline\n"), 0o644)
		case r.URL.Path == "/throttling" && h.Throttling != "" && exists(h.Throttling):
			err = os.Remove(h.Throttling)
		case r.URL.Path == "/throttling" && h.Throttling != "":
			err = os.WriteFile(h.Throttling, []byte("throttling\n"), 0o644)
		case r.URL.Path == "/corrupt" && h.Parking != nil:
			err = os.WriteFile(h.Corrupt, []byte("corrupt\n"), 0o644)
		case r.URL.Path == "/poison" && h.Orders != nil:
			err = h.Orders.Send(r.Context(), int(time.Now().Unix()%100000), true)
		case r.URL.Path == "/fix" && h.Orders != nil:
			err = h.Orders.ToggleFix()
		case (r.URL.Path == "/alert/fired" || r.URL.Path == "/alert/resolved") && h.Alerts != nil:
			h.Alerts.post(r.Context(), strings.TrimPrefix(r.URL.Path, "/alert/"))
		default:
			http.NotFound(w, r)
			return
		}
		if err != nil {
			h.Logger.Warn("demo host page", "action", r.URL.Path, "error", err)
			http.Error(w, "could not do that: see the demo host's log", http.StatusInternalServerError)
			return
		}
		http.Redirect(w, r, "/", http.StatusSeeOther)
		return
	}
	type row struct {
		P, Head, CP, Waiting int64
		Tally
	}
	now := time.Now()
	head, first := h.Head(now), h.Stream().First(now)
	h.mu.Lock()
	var rows []row
	for p, cp := range h.cps {
		rows = append(rows, row{P: int64(p), Head: head, CP: cp, Waiting: max(head-max(cp, first-1), 0)})
	}
	failures, parked, off, skipped := h.failures, h.parked, h.off, h.skipped
	h.mu.Unlock()
	var all Tally
	if h.Ledger != nil {
		for i := range rows {
			rows[i].Tally = h.Ledger.Tally(int(rows[i].P), rows[i].CP)
			all.Never, all.Once, all.More = all.Never+rows[i].Never, all.Once+rows[i].Once, all.More+rows[i].More
		}
	}
	m := map[string]any{"Function": h.Function, "Disabled": h.Disabled(), "Offline": exists(h.Offline), "Rows": rows, "Failures": failures,
		"Retries": h.Retries, "Skipped": skipped, "Ledger": h.Ledger != nil, "Once": all.Once, "More": all.More, "Never": all.Never,
		"Batch": h.BatchSize(), "Throttling": exists(h.Throttling), "CanThrottle": h.Throttling != "", "Bears": h.Bears,
		"CanPark": h.Parking != nil, "ParkAfter": ParkAfter, "Parked": parked, "Alerts": h.Alerts != nil}
	if h.Alerts != nil {
		m["AlertSaid"] = h.Alerts.said()
	}
	if h.Parking != nil {
		m["Parking"] = queueName(h.Parking)
	}
	if q := h.Orders; q != nil {
		f, done, poisoned := q.Counts()
		m["Orders"] = map[string]any{"Function": q.Function, "Queue": q.Name(), "Off": off[q.Function], "Fixed": q.IsFixed(), "Failures": f, "Done": done, "Poisoned": poisoned}
	}
	var buf bytes.Buffer
	_ = hostPage.Execute(&buf, m)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, _ = w.Write(buf.Bytes())
}

func exists(path string) bool {
	if path == "" {
		return false
	}
	_, err := os.Stat(path)
	return err == nil
}

// Tally is what the ledger says of every partition's events up to its
// checkpoint; zero without a ledger.
func (h *Host) Tally() Tally {
	var all Tally
	if h.Ledger == nil {
		return all
	}
	h.mu.Lock()
	cps := append([]int64(nil), h.cps...)
	h.mu.Unlock()
	for p, cp := range cps {
		t := h.Ledger.Tally(p, cp)
		all.Never, all.Once, all.More = all.Never+t.Never, all.Once+t.Once, all.More+t.More
	}
	return all
}
