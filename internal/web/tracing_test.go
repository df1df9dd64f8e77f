package web_test

import (
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	azfake "github.com/Azure/azure-sdk-for-go/sdk/azcore/fake"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/appservice/armappservice/v5"
	armfake "github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/appservice/armappservice/v5/fake"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/trace/noop"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/fusebox/fusebox/internal/apptest"
	"github.com/fusebox/fusebox/internal/auth"
	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/testenv"
)

type span struct{ name, trace, id, parent string }

// otlpReceiver is an in-process OTLP/HTTP collector that keeps the spans
// it is sent.
type otlpReceiver struct {
	mu    sync.Mutex
	spans []span
}

func (r *otlpReceiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	var in coltracepb.ExportTraceServiceRequest
	if req.URL.Path != "/v1/traces" || proto.Unmarshal(body, &in) != nil {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	for _, rs := range in.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				r.spans = append(r.spans, span{s.Name, hex.EncodeToString(s.TraceId), hex.EncodeToString(s.SpanId), hex.EncodeToString(s.ParentSpanId)})
			}
		}
	}
	r.mu.Unlock()
	out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

func (r *otlpReceiver) inTrace(trace string) []span {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []span
	for _, s := range r.spans {
		if s.trace == trace {
			out = append(out, s)
		}
	}
	return out
}

// A failure report that trips a circuit of an app in Azure is one trace:
// the ingest request (continuing the caller's traceparent), the trip, and
// the ARM calls that switch the trigger as children of the trip. The
// flip log keeps the traceparent.
func TestATripIsTracedFromTheReportToTheARMCall(t *testing.T) {
	t.Parallel()
	recv := &otlpReceiver{}
	collector := httptest.NewServer(recv)
	defer collector.Close()
	t.Cleanup(func() { otel.SetTracerProvider(noop.NewTracerProvider()) })

	var mu sync.Mutex
	settings := map[string]*string{"FUNCTIONS_WORKER_RUNTIME": to.Ptr("dotnet-isolated")}
	arm := &armfake.WebAppsServer{
		ListApplicationSettings: func(_ context.Context, _, _ string, _ *armappservice.WebAppsClientListApplicationSettingsOptions) (azfake.Responder[armappservice.WebAppsClientListApplicationSettingsResponse], azfake.ErrorResponder) {
			mu.Lock()
			defer mu.Unlock()
			copied := map[string]*string{}
			for k, v := range settings {
				copied[k] = to.Ptr(*v)
			}
			var out azfake.Responder[armappservice.WebAppsClientListApplicationSettingsResponse]
			out.SetResponse(http.StatusOK, armappservice.WebAppsClientListApplicationSettingsResponse{StringDictionary: armappservice.StringDictionary{Properties: copied}}, nil)
			return out, azfake.ErrorResponder{}
		},
		UpdateApplicationSettings: func(_ context.Context, _, _ string, d armappservice.StringDictionary, _ *armappservice.WebAppsClientUpdateApplicationSettingsOptions) (azfake.Responder[armappservice.WebAppsClientUpdateApplicationSettingsResponse], azfake.ErrorResponder) {
			mu.Lock()
			defer mu.Unlock()
			settings = d.Properties
			var out azfake.Responder[armappservice.WebAppsClientUpdateApplicationSettingsResponse]
			out.SetResponse(http.StatusOK, armappservice.WebAppsClientUpdateApplicationSettingsResponse{StringDictionary: d}, nil)
			return out, azfake.ErrorResponder{}
		},
	}
	log := &lockedBuffer{}
	srv := apptest.StartWith(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": collector.URL, "OTEL_BSP_SCHEDULE_DELAY": "50"},
		apptest.Options{RealClock: true, ARMTransport: armfake.NewWebAppsServerTransport(arm), Log: log, LogLevel: slog.LevelDebug}) // an accepted report is logged at debug
	key, hash := auth.NewAppKey("orders-azure")
	app := circuit.App{ID: "orders-azure", SubscriptionID: "00000000-0000-0000-0000-000000000001", ResourceGroup: "rg-orders", Site: "func-orders",
		Switch: circuit.SwitchARM, APIKeyHash: hash}
	if err := srv.App.Store.Apps.Put(t.Context(), app); err != nil {
		t.Fatal(err)
	}
	if err := srv.App.Store.Circuits.Put(t.Context(), circuit.Circuit{AppID: app.ID, Function: "ProcessOrders", Settings: circuit.Settings{Threshold: 100, Window: 30 * time.Second}, State: circuit.Closed}); err != nil {
		t.Fatal(err)
	}

	const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/api/v1/failures", strings.NewReader(`{"failures": [{"function": "ProcessOrders", "count": 101}]}`))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("traceparent", "00-"+traceID+"-00f067aa0ba902b7-01")
	wantStatus(t, newBrowser(t, srv.URL).do(req), http.StatusAccepted)

	var ingest *span
	testenv.Eventually(t, 20*time.Second, func() (bool, string) {
		spans := recv.inTrace(traceID)
		var trip *span
		ingest = nil
		children := map[string][]span{}
		for i, s := range spans {
			switch {
			case s.name == "POST /api/v1/failures":
				ingest = &spans[i]
			case s.name == "circuit open":
				trip = &spans[i]
			}
			children[s.parent] = append(children[s.parent], s)
		}
		armUnderTrip := false
		if trip != nil {
			for _, c := range descendants(children, trip.id) {
				armUnderTrip = armUnderTrip || strings.Contains(c.name, "ApplicationSettings")
			}
		}
		return ingest != nil && trip != nil && armUnderTrip,
			fmt.Sprintf("trace %s has ingest %v, trip %v, ARM under the trip %v; spans: %v", traceID, ingest != nil, trip != nil, armUnderTrip, spans)
	})
	if ingest.parent != "00f067aa0ba902b7" {
		t.Errorf("the ingest span's parent is %s, want the caller's span", ingest.parent)
	}
	// The request's log line names its trace and Fusebox's span, so a slow
	// request found in the logs is one search away in the traces.
	var line string
	for _, l := range strings.Split(log.String(), "\n") {
		if strings.Contains(l, `msg="http request"`) && strings.Contains(l, "route=/api/v1/failures") {
			line = l
		}
	}
	if !regexp.MustCompile(`trace_id=`+traceID+` span_id=[0-9a-f]{16}\b`).MatchString(line) || strings.Contains(line, "span_id=00f067aa0ba902b7") {
		t.Errorf("the report's log line %q does not carry trace_id %s and Fusebox's own span_id", line, traceID)
	}
	flips, err := srv.App.Store.Circuits.Flips(t.Context(), app.ID, "ProcessOrders", 1)
	if err != nil || len(flips) != 1 || !strings.Contains(flips[0].TraceParent, traceID+"-00f067aa0ba902b7-") {
		t.Errorf("the flip log keeps %+v (err %v), want the report's traceparent (the caller's span, not Fusebox's request span)", flips, err)
	}
}

func descendants(children map[string][]span, id string) []span {
	var out []span
	for _, c := range children[id] {
		out = append(out, c)
		out = append(out, descendants(children, c.id)...)
	}
	return out
}
