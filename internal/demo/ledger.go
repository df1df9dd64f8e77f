package demo

// The demo host's ledger: how many times each event was processed, kept
// on disk beside its state so that it survives the restarts a switch
// causes. A line is appended per processed batch before its checkpoint
// is written, so a host stopped between the two counts the batch again
// when it runs it again, as it really does.

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
)

// maxLedger bounds the events the ledger counts per partition (a day of
// the demo's hub at 5 events a second is 432,000).
const maxLedger = 4 << 20

// maxLedgerPartitions bounds the partitions counted (Event Hubs' premium
// tier has at most 100; the demo's hub 4): a line naming another is
// skipped, so a ledger file edited by hand cannot grow the maps.
const maxLedgerPartitions = 128

// compactAfter is how many lines are appended before the file is written
// again as runs: a batch is a line, so a day of the demo's hub would
// otherwise be hundreds of thousands of them, read at every restart.
const compactAfter = 50_000

// Ledger counts processed events per partition and sequence number.
type Ledger struct {
	path string
	mu   sync.Mutex
	// base[p] is the first sequence number counted on p: the first event
	// after the checkpoint the host first started from.
	base   map[int]int64
	counts map[int][]uint8
	file   *os.File
	lines  int // appended since the file was last written as runs
}

// OpenLedger reads the ledger at path, or starts one.
func OpenLedger(path string) (*Ledger, error) {
	l := &Ledger{path: path, base: map[int]int64{}, counts: map[int][]uint8{}}
	f, err := os.Open(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, err
	default:
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			var kind string
			var p int
			var a, b int64
			if _, err := fmt.Sscan(sc.Text(), &kind, &p, &a, &b); err != nil || p < 0 || p >= maxLedgerPartitions {
				continue // a line cut short by a stop, or not the ledger's
			}
			switch kind {
			case "base":
				if _, ok := l.base[p]; !ok {
					l.base[p] = a
				}
			case "done":
				l.add(p, a, b)
			}
		}
		f.Close()
	}
	if err := l.compact(); err != nil {
		return nil, err
	}
	return l, nil
}

// compact writes the ledger afresh as runs of equal counts (a run counted
// n times is n lines), replacing the file whole, and opens it to append.
func (l *Ledger) compact() error {
	tmp, err := os.CreateTemp(filepath.Dir(l.path), filepath.Base(l.path)+"-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	w := bufio.NewWriter(tmp)
	for p, base := range l.base {
		fmt.Fprintf(w, "base %d %d 0\n", p, base)
		c := l.counts[p]
		for i := 0; i < len(c); {
			j := i
			for j+1 < len(c) && c[j+1] == c[i] {
				j++
			}
			for range c[i] {
				fmt.Fprintf(w, "done %d %d %d\n", p, base+int64(i), base+int64(j))
			}
			i = j + 1
		}
	}
	err = w.Flush()
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), l.path)
	}
	if err != nil {
		return err
	}
	if l.file != nil {
		l.file.Close()
	}
	l.lines = 0
	l.file, err = os.OpenFile(l.path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	return err
}

// Start says partition p is counted from seq on, unless it already is.
func (l *Ledger) Start(p int, seq int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if p < 0 || p >= maxLedgerPartitions {
		return fmt.Errorf("demo ledger: partition %d is not counted (at most %d)", p, maxLedgerPartitions)
	}
	if _, ok := l.base[p]; ok {
		return nil
	}
	l.base[p] = seq
	_, err := fmt.Fprintf(l.file, "base %d %d 0\n", p, seq)
	return err
}

// Done counts events from..to of p as processed once more.
func (l *Ledger) Done(p int, from, to int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, err := fmt.Fprintf(l.file, "done %d %d %d\n", p, from, to); err != nil {
		return err
	}
	l.add(p, from, to)
	if l.lines++; l.lines >= compactAfter {
		return l.compact()
	}
	return nil
}

func (l *Ledger) add(p int, from, to int64) {
	base, ok := l.base[p]
	if !ok {
		return
	}
	c := l.counts[p]
	for seq := max(from, base); seq <= to && seq-base < maxLedger; seq++ {
		i := int(seq - base)
		for len(c) <= i {
			c = append(c, 0)
		}
		if c[i] < 255 {
			c[i]++
		}
	}
	l.counts[p] = c
}

// Tally is what the ledger says of the events of one partition up to
// its checkpoint.
type Tally struct {
	Never, Once, More int64
}

// Tally counts p's events from its base up to and including upTo.
func (l *Ledger) Tally(p int, upTo int64) Tally {
	l.mu.Lock()
	defer l.mu.Unlock()
	var t Tally
	base, ok := l.base[p]
	if !ok {
		return t
	}
	c := l.counts[p]
	for seq := base; seq <= upTo && seq-base < maxLedger; seq++ {
		n := uint8(0)
		if i := int(seq - base); i < len(c) {
			n = c[i]
		}
		switch {
		case n == 0:
			t.Never++
		case n == 1:
			t.Once++
		default:
			t.More++
		}
	}
	return t
}

// Close closes the ledger's file.
func (l *Ledger) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.file.Close()
}
