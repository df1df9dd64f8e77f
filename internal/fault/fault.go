// Package fault names what Fusebox could not read of what others wrote: a
// stored row it skipped, and why, shown on the dashboard instead of
// stopping anything.
package fault

import "time"

// Row is a stored row that could not be read.
type Row struct {
	Table   string // logical table name, e.g. Circuits
	Key     string // PartitionKey/RowKey
	Problem string
	Seen    time.Time // when this process last read it
}

// Lister lists every row known not to read (storage.Faults).
type Lister interface {
	List() []Row
}
