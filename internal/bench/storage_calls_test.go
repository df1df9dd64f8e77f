package bench_test

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// storageCalls is how many calls to Table Storage the app has made, as
// its own metric counts them.
func storageCalls(b testing.TB, r *prometheus.Registry) float64 {
	mfs, err := r.Gather()
	if err != nil {
		b.Fatal(err)
	}
	n := 0.0
	for _, mf := range mfs {
		if mf.GetName() != "fusebox_storage_calls_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			n += m.GetCounter().GetValue()
		}
	}
	return n
}
