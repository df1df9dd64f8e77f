package bench_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/fusebox/fusebox/internal/apptest"
	"github.com/fusebox/fusebox/internal/jobs"
)

// BenchmarkJobsPagesWithAFloodedJob is P4 for jobs: /jobs and the overview
// with 50 daily jobs, measured with no flood and then after one job's
// store has 20,000 runs in its last day (what 400 exports of 50
// invocations named after its timer stored before runs were bounded per
// slot). Each job's week is read at most what its slots may hold, newest
// first, so the flooded job costs a read of 130 runs, not 20,000; a job
// whose row did not change since the last view is not read again
// (jobs.RunCache), so the page is measured also with every job changed.
//
//	go test ./internal/bench -run '^$' -bench JobsPagesWithAFloodedJob -benchtime 200x
func BenchmarkJobsPagesWithAFloodedJob(b *testing.B) {
	srv := apptest.StartRealClock(b, nil)
	ctx := context.Background()
	st := srv.App.Store
	var flooded string
	var all []string
	for i := range 50 {
		j := jobs.Fresh(time.Now().Add(-8 * 24 * time.Hour))
		j.Name, j.Schedule, j.TimeZone, j.Grace, j.Status = fmt.Sprintf("Daily %02d", i), "0 0 2 * * *", "UTC", time.Hour, jobs.Up
		if err := st.Jobs.Put(ctx, j); err != nil {
			b.Fatal(err)
		}
		if i == 0 {
			flooded = j.ID
		}
		all = append(all, j.ID)
	}
	c := signIn(b, srv)
	view := func(path string) time.Duration {
		start := time.Now()
		resp, err := c.Get(srv.URL + path)
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("%s: status %d", path, resp.StatusCode)
		}
		return time.Since(start)
	}
	// Phases: quiet (no job ran since the last view: each job's runs are
	// kept between views); every job ran before each view (each job's row
	// changed, so every job's runs are read again: the page's worst case,
	// at 02:00 when daily jobs run); one job flooded with 20,000 runs,
	// still arriving (its row changes before each view).
	for _, phase := range []string{"quiet", "everyone-ran", "flooded"} {
		if phase == "flooded" {
			now := time.Now()
			runs := make([]jobs.Run, 20_000)
			for i := range runs {
				at := now.Add(-time.Duration(i+1) * 4 * time.Second)
				runs[i] = jobs.Run{ID: fmt.Sprintf("flood-%05d", i), Start: at, End: at}
			}
			if err := st.Runs.Import(ctx, flooded, runs); err != nil {
				b.Fatal(err)
			}
		}
		arrive := func() {
			var ran []string
			switch phase {
			case "everyone-ran":
				ran = all
			case "flooded":
				ran = []string{flooded}
			}
			for _, id := range ran {
				if err := st.Jobs.Touch(ctx, id, time.Now()); err != nil {
					b.Fatal(err)
				}
			}
		}
		for _, page := range []struct{ name, path string }{{"jobs", "/jobs"}, {"overview", "/"}} {
			b.Run(page.name+"-"+phase, func(b *testing.B) {
				arrive()
				first := view(page.path)
				var times []time.Duration
				for b.Loop() {
					b.StopTimer()
					arrive()
					b.StartTimer()
					times = append(times, view(page.path))
				}
				b.ReportMetric(ms(first), "first-ms")
				b.ReportMetric(ms(percentile(times, 0.5)), "p50-ms")
				b.ReportMetric(ms(percentile(times, 0.99)), "p99-ms")
				b.ReportMetric(ms(slices.Max(times)), "max-ms")
				b.ReportMetric(0, "ns/op")
			})
		}
	}
}
