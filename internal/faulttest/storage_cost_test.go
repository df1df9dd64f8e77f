package faulttest_test

import (
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/demo"
	"github.com/fusebox/fusebox/internal/testenv"
)

// BenchmarkStorageOpsAtRest is what Fusebox costs in storage operations
// with 1,000 healthy circuits and nothing failing: three `fusebox serve`
// processes on one Azurite, each one's storage calls counted by its own
// /metrics (fusebox_storage_calls_total) over one minute, which includes
// the once-a-minute full rereads. It reports operations per second for the
// three together and for the busiest one.
//
//	go test ./internal/faulttest -run '^$' -bench StorageOpsAtRest -benchtime 1x
func BenchmarkStorageOpsAtRest(b *testing.B) {
	const nCircuits, window = 1000, time.Minute
	r := newRigOn(b, testenv.ConnectionString(b))
	for i := range nCircuits {
		if err := r.st.Circuits.Put(b.Context(), circuit.Circuit{AppID: demo.AppID, Function: fmt.Sprintf("Healthy%04d", i), Settings: circuit.Settings{Threshold: 100, Window: 30 * time.Second}}); err != nil {
			b.Fatal(err)
		}
	}
	all := r.start(3)
	<-time.After(15 * time.Second) // past the start-up reads and the circuits' rows' margin: measured, not waited on
	calls := func() []float64 {
		out := make([]float64, len(all))
		for i, in := range all {
			resp, err := http.Get(in.URL + "/metrics")
			if err != nil {
				b.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			for _, line := range strings.Split(string(body), "\n") {
				if strings.HasPrefix(line, "fusebox_storage_calls_total{") {
					f, _ := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
					out[i] += f
				}
			}
		}
		return out
	}
	var before, after []float64
	for b.Loop() {
		before = calls()
		<-time.After(window)
		after = calls()
	}
	total, busiest := 0.0, 0.0
	for i := range all {
		d := (after[i] - before[i]) / window.Seconds()
		total += d
		busiest = max(busiest, d)
	}
	b.ReportMetric(total, "ops/s")
	b.ReportMetric(busiest, "busiest-instance-ops/s")
	b.ReportMetric(0, "ns/op")
}
