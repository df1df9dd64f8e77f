package storage

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fusebox/fusebox/internal/tablestore"
)

// touchGroup gathers the last-run merges of pings that arrive together
// into one entity group transaction: every job's row is in one partition,
// so the pings of many jobs at the turn of a minute cost one round trip,
// not one each, and each ping still answers only once its own merge is
// stored (a group commit, not a write behind).
type touchGroup struct {
	mu      sync.Mutex
	waiting []*touch
	running int // batches being gathered or sent
	batches atomic.Int64
}

type touch struct {
	row  *touchRow
	done chan error // buffered: the sender never waits
}

const (
	// touchRunners is how many batches may be in flight at once: one
	// gathers while another is answered.
	touchRunners = 2
	// touchTimeout bounds one batch, whoever's request it carries.
	touchTimeout = 10 * time.Second
)

// errAlone is a touch that could not go with the others (its row was in
// the batch already, or another row of the batch failed it): its caller
// writes it alone, as before grouping.
var errAlone = errors.New("storage: write the touch alone")

// merge stores row (a conditional merge at its ETag) with whatever other
// touches are waiting. errAlone asks the caller to write it alone.
func (g *touchGroup) merge(ctx context.Context, table *tablestore.Table, row *touchRow) error {
	t := &touch{row: row, done: make(chan error, 1)}
	g.mu.Lock()
	g.waiting = append(g.waiting, t)
	start := g.running < touchRunners
	if start {
		g.running++
	}
	g.mu.Unlock()
	if start {
		go g.run(table)
	}
	select {
	case err := <-t.done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// run sends batches until nothing waits.
func (g *touchGroup) run(table *tablestore.Table) {
	for {
		g.mu.Lock()
		if len(g.waiting) == 0 {
			g.running--
			g.mu.Unlock()
			return
		}
		batch, alone, rest := split(g.waiting)
		g.waiting = rest
		g.mu.Unlock()
		for _, t := range alone {
			t.done <- errAlone
		}
		g.send(table, batch)
	}
}

// split takes up to a transaction's worth of touches, each row once; a
// second touch of a row in the batch goes alone.
func split(waiting []*touch) (batch, alone, rest []*touch) {
	seen := map[string]bool{}
	for i, t := range waiting {
		if len(batch) == tablestore.MaxBatchActions {
			return batch, alone, append([]*touch(nil), waiting[i:]...)
		}
		if seen[t.row.RowKey] {
			alone = append(alone, t)
			continue
		}
		seen[t.row.RowKey] = true
		batch = append(batch, t)
	}
	return batch, alone, nil
}

func (g *touchGroup) send(table *tablestore.Table, batch []*touch) {
	g.batches.Add(1)
	ctx, cancel := context.WithTimeout(context.Background(), touchTimeout)
	defer cancel()
	b := table.NewBatch(jobsPartition)
	var err error
	for _, t := range batch {
		if err = b.Merge(t.row); err != nil {
			break
		}
	}
	if err == nil {
		err = b.Submit(ctx)
	}
	if err != nil && (errors.Is(err, tablestore.ErrConflict) || errors.Is(err, tablestore.ErrNotFound) || errors.Is(err, tablestore.ErrBatch)) {
		// One row changed or went; the others did not fail: each is
		// written alone, where a conflict reads its row again.
		err = errAlone
	} else if err != nil {
		err = fmt.Errorf("storage: touch %d jobs: %w", len(batch), err)
	}
	for _, t := range batch {
		t.done <- err
	}
}
