package tablestore

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
)

// Azure's limits for one Entity group transaction. Azurite enforces fewer of
// them, so they are checked here, before anything is sent.
const (
	MaxBatchActions = 100
	MaxBatchBytes   = 4 << 20
	// batchOverhead is a generous allowance for the multipart framing each
	// action adds around its Entity body.
	batchOverhead = 512
)

// Batch is an atomic group of writes to one partition of one table: either
// all take effect or none.
type Batch struct {
	table        *Table
	partitionKey string
	actions      []aztables.TransactionAction
	keys         []string
	bytes        int
}

// NewBatch starts a batch for one partition.
func (t *Table) NewBatch(partitionKey string) *Batch {
	return &Batch{table: t, partitionKey: partitionKey}
}

// Len is the number of actions so far.
func (b *Batch) Len() int { return len(b.actions) }

// Insert adds a row that must not exist yet.
func (b *Batch) Insert(e Entity) error { return b.add(aztables.TransactionTypeAdd, e, "") }

// Upsert adds a blind replace.
func (b *Batch) Upsert(e Entity) error {
	return b.add(aztables.TransactionTypeInsertReplace, e, "")
}

// Update adds a replace conditional on the row's ETag.
func (b *Batch) Update(e Entity) error {
	if e.meta().ETag == "" {
		return fmt.Errorf("%w: update of %s without an ETag", ErrBatch, keyOf(e))
	}
	return b.add(aztables.TransactionTypeUpdateReplace, e, e.meta().ETag)
}

// Merge adds a merge conditional on the row's ETag: the properties e
// has are set, the row's others stay (as Table.Merge).
func (b *Batch) Merge(e Entity) error {
	if e.meta().ETag == "" {
		return fmt.Errorf("%w: merge of %s without an ETag", ErrBatch, keyOf(e))
	}
	return b.add(aztables.TransactionTypeUpdateMerge, e, e.meta().ETag)
}

// Delete adds a delete conditional on etag (AnyETag for unconditional).
func (b *Batch) Delete(partitionKey, rowKey string, etag ETag) error {
	if etag == "" {
		return fmt.Errorf("%w: delete of %s/%s without an ETag", ErrBatch, partitionKey, rowKey)
	}
	row := &Meta{PartitionKey: partitionKey, RowKey: rowKey}
	return b.add(aztables.TransactionTypeDelete, row, etag)
}

func (b *Batch) add(kind aztables.TransactionType, e Entity, etag ETag) error {
	m := e.meta()
	switch {
	case m.PartitionKey != b.partitionKey:
		return fmt.Errorf("%w: row %s is not in partition %q; a batch holds one partition", ErrBatch, keyOf(e), b.partitionKey)
	case len(b.actions) >= MaxBatchActions:
		return fmt.Errorf("%w: more than %d actions", ErrBatch, MaxBatchActions)
	}
	key := m.RowKey
	for _, k := range b.keys {
		if k == key {
			return fmt.Errorf("%w: row %s appears twice; a batch may touch a row once", ErrBatch, keyOf(e))
		}
	}
	body, err := marshal(e)
	if err != nil {
		return err
	}
	if b.bytes+len(body)+batchOverhead > MaxBatchBytes {
		return fmt.Errorf("%w: over %d bytes", ErrBatch, MaxBatchBytes)
	}
	action := aztables.TransactionAction{ActionType: kind, Entity: body}
	if etag != "" {
		e := azcore.ETag(etag)
		action.IfMatch = &e
	}
	b.actions = append(b.actions, action)
	b.keys = append(b.keys, key)
	b.bytes += len(body) + batchOverhead
	return nil
}

// Submit sends the batch. On failure nothing was written, and the error
// carries the status of the action that failed (ErrConflict, ErrExists,
// ErrNotFound...). An empty batch is a no-op.
func (b *Batch) Submit(ctx context.Context) error {
	if len(b.actions) == 0 {
		return nil
	}
	start := time.Now()
	var err error
	if b.table.wire != nil {
		err = b.table.wire.submit(ctx, b.table.name, b.partitionKey, b.keys, b.actions)
	} else {
		_, err = b.table.client.SubmitTransaction(ctx, b.actions, nil)
	}
	b.table.observe("batch", b.table.name, time.Since(start), err)
	if err == nil {
		return nil
	}
	var failed *transactionFailed
	if errors.As(err, &failed) {
		return &Error{Op: "batch", Table: b.table.name, Key: b.partitionKey, Status: failed.status, Code: failed.code, Kind: kindOf(failed.status, failed.code), Err: err}
	}
	return decodeBatchError(b.table.name, b.partitionKey, err)
}

var (
	// The failed action's response sits inside the multipart body that the
	// SDK wraps in an error whose status is the envelope's 202.
	innerStatus = regexp.MustCompile(`HTTP/1\.1 (\d{3})`)
	innerCode   = regexp.MustCompile(`"code"\s*:\s*"([A-Za-z]+)"`)
)

func decodeBatchError(table, partitionKey string, err error) error {
	e := &Error{Op: "batch", Table: table, Key: partitionKey, Err: err}
	var re *azcore.ResponseError
	if !errors.As(err, &re) {
		return e
	}
	e.Status, e.Code = re.StatusCode, re.ErrorCode
	if re.StatusCode == http.StatusAccepted || re.ErrorCode == "" {
		text := err.Error()
		for _, m := range innerStatus.FindAllStringSubmatch(text, -1) {
			if s, convErr := strconv.Atoi(m[1]); convErr == nil && s >= 400 {
				e.Status = s
				break
			}
		}
		if m := innerCode.FindStringSubmatch(text); m != nil {
			e.Code = m[1]
		}
	}
	e.Kind = kindOf(e.Status, e.Code)
	return e
}
