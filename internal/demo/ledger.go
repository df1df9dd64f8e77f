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
	"sync"
)

// maxLedger bounds the events the ledger counts per partition (a day of
// the demo's hub at 5 events a second is 432,000).
const maxLedger = 4 << 20

// Ledger counts processed events per partition and sequence number.
type Ledger struct {
	path string
	mu   sync.Mutex
	// base[p] is the first sequence number counted on p: the first event
	// after the checkpoint the host first started from.
	base   map[int]int64
	counts map[int][]uint8
	file   *os.File
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
			if _, err := fmt.Sscan(sc.Text(), &kind, &p, &a, &b); err != nil {
				continue // a line cut short by a stop
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
	if l.file, err = os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644); err != nil {
		return nil, err
	}
	return l, nil
}

// Start says partition p is counted from seq on, unless it already is.
func (l *Ledger) Start(p int, seq int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
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
