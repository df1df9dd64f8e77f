package lease_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/fusebox/fusebox/internal/lease"
	"github.com/fusebox/fusebox/internal/storage"
	"github.com/fusebox/fusebox/internal/tablestore"
	"github.com/fusebox/fusebox/internal/testenv"
)

// BenchmarkTakeover measures, with the default settings and the real clock,
// how long after a holder is cut off from storage (as when its instance
// dies) its work stops and another instance takes the lease over. Each
// iteration takes about 15 s: run it with -benchtime Nx.
//
//	go test ./internal/lease -run '^$' -bench Takeover -benchtime 5x
func BenchmarkTakeover(b *testing.B) {
	svc, prefix := testenv.Storage(b)
	if err := svc.CreateTable(context.Background(), storage.TableLeases); err != nil {
		b.Fatal(err)
	}
	newLocker := func(name string) (*lease.Locker, *cuttable) {
		link := &cuttable{}
		s, err := tablestore.NewFromConnectionString(testenv.ConnectionString(b), tablestore.Options{Prefix: prefix, Transport: link, MaxRetries: -1})
		if err != nil {
			b.Fatal(err)
		}
		l, err := lease.New(storage.New(s).Leases, lease.Settings{Identity: name})
		if err != nil {
			b.Fatal(err)
		}
		return l, link
	}
	var takeovers, stops []time.Duration
	for i := 0; b.Loop(); i++ {
		name := fmt.Sprintf("bench/%d", i)
		a, aLink := newLocker("a")
		c, _ := newLocker("c")
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		held, err := a.TryAcquire(ctx, name)
		if err != nil {
			b.Fatal(err)
		}
		acquired := make(chan time.Time, 1)
		go func() {
			le, err := c.Acquire(ctx, name)
			if err == nil {
				acquired <- time.Now()
				le.Release(context.Background())
			}
		}()
		// Die at a random point of the renewal cycle.
		time.Sleep(time.Duration(rand.Int64N(int64(2 * time.Second))))
		aLink.cut.Store(true)
		died := time.Now()
		<-held.Context().Done()
		if !errors.Is(context.Cause(held.Context()), lease.ErrLost) {
			b.Fatalf("holder stopped for %v", context.Cause(held.Context()))
		}
		stops = append(stops, time.Since(died))
		select {
		case at := <-acquired:
			takeovers = append(takeovers, at.Sub(died))
		case <-ctx.Done():
			b.Fatal("no takeover within a minute")
		}
		cancel()
	}
	slices.Sort(takeovers)
	slices.Sort(stops)
	b.ReportMetric(takeovers[0].Seconds(), "takeover-min-s")
	b.ReportMetric(takeovers[len(takeovers)/2].Seconds(), "takeover-p50-s")
	b.ReportMetric(takeovers[len(takeovers)-1].Seconds(), "takeover-max-s")
	b.ReportMetric(stops[len(stops)-1].Seconds(), "holder-stop-max-s")
	b.ReportMetric(0, "ns/op")
}
