package storage_test

import (
	"sync"
	"testing"
	"time"

	"github.com/fusebox/fusebox/internal/jobs"
	"github.com/fusebox/fusebox/internal/storage"
	"github.com/fusebox/fusebox/internal/testenv"
)

// The pings of many jobs at once each store their job's last run time, in
// fewer writes than pings; one whose job changed since it was read (its
// write in a group would fail the group) and a second ping of the same job
// are stored too, with the later time kept.
func TestPingsAtOnceStoreEveryLastRunInFewerWrites(t *testing.T) {
	svc, _ := testenv.Storage(t)
	if err := svc.CreateTable(t.Context(), storage.TableJobs); err != nil {
		t.Fatal(err)
	}
	js := storage.New(svc).Jobs
	t0 := time.Date(2026, 12, 6, 9, 0, 0, 0, time.UTC)
	const n = 60
	read := make([]jobs.Job, n)
	for i := range read {
		j := jobs.Job{ID: jobs.NewID(), Name: "Minutely", Schedule: "* * * * *", TimeZone: "UTC", Grace: time.Minute, CreatedAt: t0, Status: jobs.New}
		if err := js.Create(t.Context(), j); err != nil {
			t.Fatal(err)
		}
		got, err := js.Get(t.Context(), j.ID)
		if err != nil {
			t.Fatal(err)
		}
		read[i] = got
	}
	// Job 0 changes after its pings read it.
	if err := js.Touch(t.Context(), read[0].ID, t0.Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, n+1)
	for i, j := range read {
		wg.Go(func() { errs <- js.TouchRead(t.Context(), j, t0.Add(time.Duration(i)*time.Second), false) })
	}
	wg.Go(func() { errs <- js.TouchRead(t.Context(), read[1], t0.Add(time.Hour), false) }) // job 1 again, later
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	for i, j := range read {
		got, err := js.Get(t.Context(), j.ID)
		if err != nil {
			t.Fatal(err)
		}
		want := t0.Add(time.Duration(i) * time.Second)
		if i == 1 {
			want = t0.Add(time.Hour)
		}
		if !got.LastRunAt.Equal(want) {
			t.Errorf("job %d: last run %s, want %s", i, got.LastRunAt, want)
		}
	}
	if b := storage.TouchBatches(js); b == 0 || b >= n {
		t.Errorf("%d pings at once took %d grouped writes: want some, fewer than the pings", n+1, b)
	}
}
