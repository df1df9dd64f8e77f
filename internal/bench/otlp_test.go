package bench_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/fusebox/fusebox/internal/apptest"
	"github.com/fusebox/fusebox/internal/auth"
	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/storage"
	"github.com/fusebox/fusebox/internal/testenv"
)

// otlpExport is one export as the host batches it: spans of functions
// over seconds, every one failed, each with its own invocation id.
func otlpExport(tag string, at time.Time, spans, functions, seconds int) *coltracepb.ExportTraceServiceRequest {
	out := make([]*tracepb.Span, spans)
	for i := range out {
		end := at.Add(time.Duration(i%seconds) * time.Second)
		// Shaped like a host's span: trace and parent ids, ten
		// attributes of which Fusebox reads two, an exception event.
		out[i] = &tracepb.Span{Name: fmt.Sprintf("F%d", i%functions), Kind: tracepb.Span_SPAN_KIND_SERVER,
			TraceId: []byte("0123456789abcdef"), ParentSpanId: []byte("01234567"),
			SpanId: []byte{byte(i >> 8), byte(i), 0, 0, 0, 0, 0, 1}, EndTimeUnixNano: uint64(end.UnixNano()), StartTimeUnixNano: uint64(end.UnixNano()),
			Attributes: []*commonpb.KeyValue{str("faas.invocation_id", fmt.Sprintf("%s-%d", tag, i)), str("faas.name", fmt.Sprintf("F%d", i%functions)),
				str("faas.trigger", "pubsub"), str("az.schema_url", "https://opentelemetry.io/schemas/1.17.0"), str("messaging.system", "eventhubs"),
				str("messaging.destination.name", "orders"), str("server.address", "ns.servicebus.windows.net"), str("code.function", "Contoso.Orders.Run"),
				str("process.pid", "4242"), str("host.name", "10-30-0-4")},
			Events: []*tracepb.Span_Event{{Name: "exception", TimeUnixNano: uint64(end.UnixNano()), Attributes: []*commonpb.KeyValue{
				str("exception.type", "System.TimeoutException"), str("exception.message", "The store did not answer within 30 s.")}}},
			Status: &tracepb.Status{Code: tracepb.Status_STATUS_CODE_ERROR, Message: "The store did not answer within 30 s."}}
	}
	if os.Getenv("BENCH_SPANS") == "plain" {
		// As #23 measured: one attribute, the invocation id, and no event.
		for _, sp := range out {
			sp.Attributes, sp.Events, sp.TraceId, sp.ParentSpanId = sp.Attributes[:1], nil, nil, nil
		}
	}
	return &coltracepb.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{{
		Resource:   &resourcepb.Resource{Attributes: []*commonpb.KeyValue{{Key: "service.name", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: "func-bench"}}}}},
		ScopeSpans: []*tracepb.ScopeSpans{{Scope: &commonpb.InstrumentationScope{Name: "Microsoft.Azure.WebJobs.Host"}, Spans: out}},
	}}}
}

func str(key, value string) *commonpb.KeyValue {
	return &commonpb.KeyValue{Key: key, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: value}}}
}

func postExport(client *http.Client, url, key string, body []byte) (int, error) {
	return postExportEncoded(client, url, key, body, "")
}

// postExportEncoded posts an export whose body is in the Content-Encoding
// given ("" for none).
func postExportEncoded(client *http.Client, url, key string, body []byte, encoding string) (int, error) {
	req, _ := http.NewRequest(http.MethodPost, url+"/v1/traces", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/x-protobuf")
	if encoding != "" {
		req.Header.Set("Content-Encoding", encoding)
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, nil
}

// BenchmarkOTLPIngest is P7: spans taken per second through OTLP/HTTP in
// the host's batches of 512 (4 functions over 5 seconds, so each export
// becomes 20 failure rows), against plain aztables transactions writing
// the same 20 rows per batch to the same Azurite (64 distinct batches
// sent over and over on both sides: the OTLP side's are exports sent
// again, which replace their rows, and the raw side replaces its own), with the same
// concurrency, measured in the same run: three rounds of 3 s each
// (BENCH_ROUNDS for more), the two sides taking turns, so that a machine
// that slows down mid-run slows both. The raw side's rows are copies of one
// Fusebox wrote (writtenRow): the same properties, error sample included.
//
//	go test ./internal/bench -run '^$' -bench OTLPIngest -benchtime 1x
func BenchmarkOTLPIngest(b *testing.B) {
	const workers, spans, functions, seconds, bodies = 4, 512, 4, 5, 64
	const phase = 3 * time.Second
	rounds := 3
	if n, err := strconv.Atoi(os.Getenv("BENCH_ROUNDS")); err == nil && n > 0 {
		rounds = n
	}
	// The app's budget (100 exports/s by default, each host instance
	// sending two every 5 s) is lifted: this measures the path, not it.
	srv := apptest.Start(b, map[string]string{"FUSEBOX_INGEST_RATE_LIMIT": "100000", "FUSEBOX_INGEST_ROW_LIMIT": "10000000"})
	ctx := context.Background()
	key, hash := auth.NewAppKey("bench")
	if err := srv.App.Store.Apps.Put(ctx, circuit.App{ID: "bench", Site: "func-bench", Switch: circuit.SwitchLocal, LocalSettings: "/dev/null", APIKeyHash: hash}); err != nil {
		b.Fatal(err)
	}
	for i := range functions {
		if err := srv.App.Store.Circuits.Put(ctx, circuit.Circuit{AppID: "bench", Function: fmt.Sprintf("F%d", i), Settings: circuit.Settings{Threshold: 1 << 30, Window: 30 * time.Second}}); err != nil {
			b.Fatal(err)
		}
	}
	at := srv.Clock.Now().UTC().Truncate(time.Minute).Add(10 * time.Second)
	exports := make([][]byte, bodies)
	for i := range exports {
		exports[i], _ = proto.Marshal(otlpExport(fmt.Sprint(i), at, spans, functions, seconds))
	}
	// run calls send from workers goroutines for phase and says how many
	// batches per second went through.
	run := func(send func(i int) error) float64 {
		var n atomic.Int64
		var wg sync.WaitGroup
		var failed atomic.Value
		start := time.Now()
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := w; time.Since(start) < phase; i += workers {
					if err := send(i); err != nil {
						failed.Store(err)
						return
					}
					n.Add(1)
				}
			}()
		}
		wg.Wait()
		if err, _ := failed.Load().(error); err != nil {
			b.Fatal(err)
		}
		return float64(n.Load()) / time.Since(start).Seconds()
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: workers}}
	viaOTLP := func(i int) error {
		status, err := postExport(client, srv.URL, key, exports[i%bodies])
		if err == nil && status != http.StatusOK {
			err = fmt.Errorf("status %d", status)
		}
		return err
	}
	raw := rawTable(b)
	template := writtenRow(b, srv, viaOTLP)
	b.Logf("each side writes rows like %v", template)
	viaRaw := func(i int) error {
		actions := make([]aztables.TransactionAction, 0, functions*seconds)
		pk := at.Format("200601021504") + fmt.Sprintf("-%02d", (i%bodies)%16)
		for f := range functions {
			for s := range seconds {
				sec := at.Add(time.Duration(s) * time.Second)
				e := make(map[string]any, len(template))
				for k, v := range template {
					e[k] = v
				}
				e["PartitionKey"], e["RowKey"] = pk, fmt.Sprintf("bench|F%d|%02d|raw.%d", f, sec.Second(), i%bodies)
				e["Function"], e["Second"] = fmt.Sprintf("F%d", f), sec.Format(time.RFC3339)
				data, _ := json.Marshal(e)
				actions = append(actions, aztables.TransactionAction{ActionType: aztables.TransactionTypeInsertReplace, Entity: data})
			}
		}
		_, err := raw.SubmitTransaction(ctx, actions, nil)
		return err
	}
	var otlpRate, rawRate float64
	for r := range rounds {
		o, w := run(viaOTLP), run(viaRaw)
		b.Logf("round %d: otlp %.0f, raw %.0f spans/s", r, o*spans, w*spans)
		otlpRate += o / float64(rounds)
		rawRate += w / float64(rounds)
	}
	b.ReportMetric(otlpRate*spans, "otlp-spans/s")
	b.ReportMetric(rawRate*spans, "raw-spans/s")
	b.ReportMetric(otlpRate/rawRate, "ratio")
	b.ReportMetric(0, "ns/op")
}

// writtenRow sends one export through send and reads back, as plain JSON,
// one failure row Fusebox wrote for it: the raw side writes rows with the
// same properties and values (the error sample, the instance, the
// counts), so the two sides store the same bytes, whatever a row holds.
func writtenRow(b *testing.B, srv *apptest.Server, send func(i int) error) map[string]any {
	b.Helper()
	if err := send(0); err != nil {
		b.Fatal(err)
	}
	svc, err := aztables.NewServiceClientFromConnectionString(testenv.ConnectionString(b), &aztables.ClientOptions{ClientOptions: testenv.Bounded()})
	if err != nil {
		b.Fatal(err)
	}
	filter, top := "App eq 'bench'", int32(1)
	pager := svc.NewClient(srv.Config.Storage.TablePrefix + storage.TableFailures).NewListEntitiesPager(&aztables.ListEntitiesOptions{Filter: &filter, Top: &top})
	page, err := pager.NextPage(context.Background())
	if err != nil || len(page.Entities) == 0 {
		b.Fatalf("no failure row written by the first export (%v)", err)
	}
	var row map[string]any
	if err := json.Unmarshal(page.Entities[0], &row); err != nil {
		b.Fatal(err)
	}
	for k := range row {
		if strings.HasPrefix(k, "odata.") || strings.HasPrefix(k, "Timestamp") {
			delete(row, k)
		}
	}
	return row
}

// BenchmarkOTLPTripLatency is P7's latency: on the real clock, with the
// evaluator ticking, one export of 6 failed spans crosses a circuit's
// threshold (5 in 30 s); the latency is from the export's answer to the
// trigger switched off in local.settings.json. Ten circuits, one probe
// each, one after the other.
//
//	go test ./internal/bench -run '^$' -bench OTLPTripLatency -benchtime 1x
func BenchmarkOTLPTripLatency(b *testing.B) {
	const probes = 10
	srv := apptest.StartRealClock(b, nil)
	ctx := context.Background()
	settings := b.TempDir() + "/local.settings.json"
	if err := os.WriteFile(settings, []byte(`{"IsEncrypted": false, "Values": {}}`), 0o600); err != nil {
		b.Fatal(err)
	}
	key, hash := auth.NewAppKey("bench")
	if err := srv.App.Store.Apps.Put(ctx, circuit.App{ID: "bench", Site: "func-bench", Switch: circuit.SwitchLocal, LocalSettings: settings, APIKeyHash: hash}); err != nil {
		b.Fatal(err)
	}
	for i := range probes {
		if err := srv.App.Store.Circuits.Put(ctx, circuit.Circuit{AppID: "bench", Function: fmt.Sprintf("T%d", i), Settings: circuit.Settings{Threshold: 5, Window: 30 * time.Second}, State: circuit.Closed}); err != nil {
			b.Fatal(err)
		}
	}
	client := &http.Client{}
	var ds []time.Duration
	for i := range probes {
		// Pacing, not synchronisation: a probe sent right after the trip
		// it waited for would land just after a tick every time, so each
		// starts at another point of the second.
		select {
		case <-time.After(time.Duration(i) * 97 * time.Millisecond):
		case <-b.Context().Done():
			b.Fatal("the benchmark ended while pacing")
		}
		req := otlpExport(fmt.Sprintf("trip%d", i), time.Now(), 6, 1, 1)
		for _, s := range req.ResourceSpans[0].ScopeSpans[0].Spans {
			// The span's name and its faas.name, which wins over it.
			s.Name = fmt.Sprintf("T%d", i)
			for _, kv := range s.Attributes {
				if kv.Key == "faas.name" {
					kv.Value = &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: s.Name}}
				}
			}
		}
		body, _ := proto.Marshal(req)
		status, err := postExport(client, srv.URL, key, body)
		if err != nil || status != http.StatusOK {
			b.Fatalf("export: %d %v", status, err)
		}
		sent := time.Now()
		off := testenv.WaitForFile(b, settings, fmt.Sprintf(`"AzureWebJobs.T%d.Disabled": "true"`, i), 20*time.Second)
		ds = append(ds, off.Sub(sent))
	}
	reportLatencies(b, ds)
}

// BenchmarkAPITripLatency is P1 for reports over HTTP, through a whole
// Fusebox on the real clock: 1,000 circuits under P1's background load
// (2,000 failures/s written to the table, never enough to trip), and 30
// probes, each one POST /api/v1/failures of 101 failures against a
// threshold of 100. The latency is from the report's 202 to the trigger
// switched off in local.settings.json (seen through a file watch). A
// report that may trip wakes a tick at once on the instance that took it.
//
//	go test ./internal/bench -run '^$' -bench APITripLatency -benchtime 1x
func BenchmarkAPITripLatency(b *testing.B) {
	const nCircuits, probes = 1000, 30
	srv := apptest.StartRealClock(b, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	settings := b.TempDir() + "/local.settings.json"
	if err := os.WriteFile(settings, []byte(`{"IsEncrypted": false, "Values": {}}`), 0o600); err != nil {
		b.Fatal(err)
	}
	key, hash := auth.NewAppKey("bench")
	st := srv.App.Store
	if err := st.Apps.Put(ctx, circuit.App{ID: "bench", Site: "func-bench", Switch: circuit.SwitchLocal, LocalSettings: settings, APIKeyHash: hash}); err != nil {
		b.Fatal(err)
	}
	putCircuits(b, st, nCircuits, 100, circuit.Rule{})
	agePastMargin()
	stopLoad := backgroundLoad(ctx, b, st, nCircuits, storage.Report{Count: 2})
	defer stopLoad()
	waitTicks(ctx, b, st, 3)
	client := &http.Client{}
	var ds []time.Duration
	for b.Loop() {
		ds = ds[:0]
		for i := range probes {
			// Pacing, not synchronisation: each probe lands at another
			// point of the evaluator's second.
			select {
			case <-time.After(probeSpacing):
			case <-b.Context().Done():
				b.Fatal("the benchmark ended while pacing")
			}
			body := fmt.Sprintf(`{"failures": [{"function": "F%04d", "count": 101}]}`, i)
			req, _ := http.NewRequest(http.MethodPost, srv.URL+"/api/v1/failures", strings.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+key)
			req.Header.Set("Content-Type", "application/json")
			resp, err := client.Do(req)
			if err != nil {
				b.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusAccepted {
				b.Fatalf("report: %d", resp.StatusCode)
			}
			sent := time.Now()
			off := testenv.WaitForFile(b, settings, fmt.Sprintf(`"AzureWebJobs.F%04d.Disabled": "true"`, i), 20*time.Second)
			ds = append(ds, off.Sub(sent))
		}
	}
	reportLatencies(b, ds)
	if st, err := st.Status.Evaluator(ctx); err == nil {
		b.ReportMetric(st.TickDuration.Seconds(), "last-tick-s")
	}
}
