package faulttest_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fusebox/fusebox/client"
	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/demo"
	"github.com/fusebox/fusebox/internal/faulttest"
	"github.com/fusebox/fusebox/internal/testenv"
)

// Storage stops answering for 10 s while function instances report. Every
// report Fusebox answered 202 is counted once storage is back, and the Go
// client, which keeps what it could not send and retries with the same
// idempotency key, loses and doubles nothing it was given.
func TestAStorageOutageLosesNoAcceptedReport(t *testing.T) {
	t.Parallel()
	az := faulttest.StartAzurite(t)
	r := newRigOn(t, az.ConnectionString)
	// Circuits that never trip, so the reports are failure rows the
	// evaluator counts (those of functions without one are only tallied).
	for _, f := range []string{"RawReports", "ClientReports"} {
		if err := r.st.Circuits.Put(t.Context(), circuit.Circuit{AppID: demo.AppID, Function: f, Settings: circuit.Settings{Threshold: 1 << 30, Window: 30 * time.Second}}); err != nil {
			t.Fatal(err)
		}
	}
	in := r.start(1)[0]
	start := time.Now()

	rep, err := client.New(client.Options{URL: in.URL, Key: demo.Key, Interval: 200 * time.Millisecond, Instance: "outage-test"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	clientDone := make(chan error, 1)
	go func() { clientDone <- rep.Run(ctx) }()

	// Reporters run for 20 s; storage is frozen from 5 s to 15 s.
	var wg sync.WaitGroup
	var mu sync.Mutex
	given, accepted, refused := 0, 0, 0
	stop := make(chan struct{})
	wg.Go(func() { // the Go client, one failure every 20 ms
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				rep.Failure("ClientReports", nil)
				mu.Lock()
				given++
				mu.Unlock()
			}
		}
	})
	wg.Go(func() { // plain HTTP, one report every 100 ms with a 3 s timeout
		hc := &http.Client{Timeout: 3 * time.Second}
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				req, _ := http.NewRequest(http.MethodPost, in.URL+"/api/v1/failures",
					strings.NewReader(`{"failures": [{"function": "RawReports", "count": 1}]}`))
				req.Header.Set("Authorization", "Bearer "+demo.Key)
				req.Header.Set("Content-Type", "application/json")
				resp, err := hc.Do(req)
				mu.Lock()
				if err == nil && resp.StatusCode == http.StatusAccepted {
					accepted++
				} else {
					refused++
				}
				mu.Unlock()
				if err == nil {
					resp.Body.Close()
				}
			}
		}
	})
	time.AfterFunc(5*time.Second, az.Freeze)
	time.AfterFunc(15*time.Second, az.Thaw)
	<-time.After(20 * time.Second) // how long the load runs; nothing waits on it
	close(stop)
	wg.Wait()

	// The client sends what it still holds; give it up to 30 s.
	testenv.Eventually(t, 30*time.Second, func() (bool, string) {
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		err := rep.Flush(ctx)
		return err == nil, fmt.Sprintf("the client still holds failures it could not send: %v", err)
	})
	cancel()
	<-clientDone

	rows, rejected, err := r.st.Failures.Window(t.Context(), start.Add(-time.Minute), time.Now().Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if len(rejected) > 0 {
		t.Errorf("%d stored rows unreadable: %+v", len(rejected), rejected)
	}
	stored := map[string]int{}
	for _, row := range rows {
		stored[row.Circuit] += row.Count
	}
	raw, viaClient := stored[demo.AppID+"/RawReports"], stored[demo.AppID+"/ClientReports"]
	t.Logf("plain HTTP: %d answered 202, %d refused or timed out, %d stored; Go client: %d given, %d dropped, %d stored",
		accepted, refused, raw, given, rep.Dropped(), viaClient)
	if refused == 0 {
		t.Error("no report was refused while storage was frozen: the outage did not happen")
	}
	if raw < accepted {
		t.Errorf("%d reports answered 202 but only %d stored", accepted, raw)
	}
	if viaClient != given || rep.Dropped() != 0 {
		t.Errorf("the client was given %d failures; %d stored, %d dropped", given, viaClient, rep.Dropped())
	}
}
