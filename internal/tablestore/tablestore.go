// Package tablestore is Fusebox's thin, typed layer over Azure Table Storage
// (aztables). It promises:
//
//   - every update and delete is conditional on the ETag the caller read, and
//     a lost race surfaces as ErrConflict, a missing row as ErrNotFound;
//   - queries follow continuation tokens to the end, including the empty
//     pages the service may return while more rows follow;
//   - filter values are always escaped (see Filter), so data can never
//     change the shape of a query;
//   - batches obey Azure's rules (one partition, at most 100 actions, 4 MiB)
//     even though Azurite is laxer, and a failed batch reports its real
//     status instead of the 202 the SDK shows.
//
// It knows nothing of Fusebox's domain: repositories in internal/storage
// map their rows to domain types.
package tablestore

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/tracing"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
)

// Sentinel errors. Test with errors.Is; the returned error also wraps the
// SDK's *azcore.ResponseError for detail.
var (
	ErrNotFound error = &kindError{"not found"}                  // 404: no such row or table
	ErrConflict error = &kindError{"changed by someone else"}    // 412: the ETag no longer matches
	ErrExists   error = &kindError{"already exists"}             // 409: insert of a row that exists
	ErrInvalid  error = &kindError{"rejected as invalid"}        // 400: the request was malformed
	ErrBatch          = errors.New("batch breaks Azure's rules") // caught before sending
)

// kindError is one of the table's own answers. Its Class names it for a
// log line (egress.Class), with no server's text.
type kindError struct{ what string }

func (e *kindError) Error() string { return e.what }
func (e *kindError) Class() string { return "table: " + e.what }

// Observer is told about every call to the service, for metrics.
type Observer func(op, table string, elapsed time.Duration, err error)

// Options tune a Service. The zero value is usable.
type Options struct {
	// Prefix is put in front of every table name so several installations
	// (or test runs) can share one account. Letters and digits only.
	Prefix string
	// Observe, when set, is called after every call to the service.
	Observe Observer
	// ObserveRows, when set, is told how many rows each page of a query
	// returned: a query's cost is its rows as much as its pages.
	ObserveRows func(table string, rows int)
	// Transport replaces the HTTP transport (tests, proxies).
	Transport policy.Transporter
	// Tracing, when set, makes every call a span of the caller's trace.
	Tracing tracing.Provider
	// MaxRetries is how often the SDK retries a failed call: 0 means the
	// default of 2, a negative number none (for callers with retry loops
	// of their own, and for tests of failure).
	MaxRetries int32
}

// Service is a connection to one storage account's table endpoint.
type Service struct {
	client      *aztables.ServiceClient
	wire        *wire // nil: transactions go through the SDK
	prefix      string
	observe     Observer
	observeRows func(table string, rows int)
}

// NewFromConnectionString connects with a connection string (shared key or
// SAS). It does not contact the service; call Ping for that.
func NewFromConnectionString(connectionString string, opts Options) (*Service, error) {
	c, err := aztables.NewServiceClientFromConnectionString(connectionString, clientOptions(opts))
	if err != nil {
		// The SDK's message may quote the string, and with it the key.
		return nil, errors.New("tablestore: the storage connection string is not valid")
	}
	s := newService(c, opts)
	s.wire = sharedKeyWire(connectionString, clientOptions(opts))
	return s, nil
}

// NewWithManagedIdentity connects to an account URL with
// DefaultAzureCredential (managed identity, workload identity, Azure CLI...).
func NewWithManagedIdentity(accountURL string, opts Options) (*Service, error) {
	cred, err := azidentity.NewDefaultAzureCredential(nil)
	if err != nil {
		return nil, fmt.Errorf("tablestore: no Azure credential available: %w", err)
	}
	c, err := aztables.NewServiceClient(accountURL, cred, clientOptions(opts))
	if err != nil {
		return nil, fmt.Errorf("tablestore: account URL %q: %w", accountURL, err)
	}
	s := newService(c, opts)
	// The scope the SDK asks for Table storage, in every cloud.
	s.wire = newWire(accountURL, runtime.NewBearerTokenPolicy(cred, []string{"https://storage.azure.com/.default"}, nil), clientOptions(opts))
	return s, nil
}

func clientOptions(opts Options) *aztables.ClientOptions {
	o := &aztables.ClientOptions{}
	// Retries belong to callers, who know whether an operation is idempotent;
	// keep the SDK's to a short, bounded few for transient network errors.
	retries := opts.MaxRetries
	if retries == 0 {
		retries = 2
	}
	// A try that hangs ends after 5 s: Table storage answers a page in
	// well under a second, and a frozen account must cost seconds, not the
	// minute three 15 s tries took.
	o.Retry = policy.RetryOptions{MaxRetries: retries, TryTimeout: 5 * time.Second, RetryDelay: 200 * time.Millisecond, MaxRetryDelay: 2 * time.Second}
	o.PerCallPolicies = []policy.Policy{budgetPolicy{}}
	if opts.Transport != nil {
		o.Transport = opts.Transport
	}
	o.TracingProvider = opts.Tracing
	return o
}

func newService(c *aztables.ServiceClient, opts Options) *Service {
	obs := opts.Observe
	if obs == nil {
		obs = func(string, string, time.Duration, error) {}
	}
	rows := opts.ObserveRows
	if rows == nil {
		rows = func(string, int) {}
	}
	return &Service{client: c, prefix: opts.Prefix, observe: obs, observeRows: rows}
}

// TableName is the full name of a logical table, prefix included.
func (s *Service) TableName(name string) string { return s.prefix + name }

// Table returns a handle on a table; it does not create it.
func (s *Service) Table(name string) *Table {
	full := s.TableName(name)
	return &Table{client: s.client.NewClient(full), wire: s.wire, name: full, observe: s.observe, observeRows: s.observeRows}
}

// CreateTable creates a table if it does not exist yet.
func (s *Service) CreateTable(ctx context.Context, name string) error {
	full := s.TableName(name)
	start := time.Now()
	_, err := s.client.CreateTable(ctx, full, nil)
	if err != nil {
		var re *azcore.ResponseError
		if errors.As(err, &re) && re.ErrorCode == string(aztables.TableAlreadyExists) {
			err = nil
		}
	}
	s.observe("create_table", full, time.Since(start), err)
	return wrap("create table", full, "", err)
}

// DeleteTable removes a table and everything in it. Missing tables are fine.
func (s *Service) DeleteTable(ctx context.Context, name string) error {
	full := s.TableName(name)
	start := time.Now()
	_, err := s.client.DeleteTable(ctx, full, nil)
	s.observe("delete_table", full, time.Since(start), err)
	if err = wrap("delete table", full, "", err); errors.Is(err, ErrNotFound) {
		return nil
	}
	return err
}

// Ping checks that the account answers and accepts our credentials.
func (s *Service) Ping(ctx context.Context) error {
	start := time.Now()
	top := int32(1)
	pager := s.client.NewListTablesPager(&aztables.ListTablesOptions{Top: &top})
	_, err := pager.NextPage(ctx)
	s.observe("ping", "", time.Since(start), err)
	return wrap("ping", "", "", err)
}

// Table is one table of the account.
type Table struct {
	client      *aztables.Client
	wire        *wire
	name        string
	observe     Observer
	observeRows func(table string, rows int)
}

// Name is the table's full name.
func (t *Table) Name() string { return t.name }

// Get reads one row into dst, which must be a pointer to a struct that
// embeds Meta. A missing row is ErrNotFound; one that does not decode is
// a RowError, with dst's ETag set (a conditional write can replace it).
func (t *Table) Get(ctx context.Context, partitionKey, rowKey string, dst Entity) error {
	start := time.Now()
	resp, err := t.client.GetEntity(ctx, partitionKey, rowKey, nil)
	t.observe("get", t.name, time.Since(start), err)
	if err != nil {
		return wrap("get", t.name, partitionKey+"/"+rowKey, err)
	}
	if err := unmarshal(resp.Value, dst, ETag(resp.ETag)); err != nil {
		return &RowError{PartitionKey: partitionKey, RowKey: rowKey, Err: err}
	}
	return nil
}

// Insert adds a new row and records its ETag in it. ErrExists if the key is taken.
func (t *Table) Insert(ctx context.Context, src Entity) error {
	body, err := marshal(src)
	if err != nil {
		return err
	}
	start := time.Now()
	resp, err := t.client.AddEntity(ctx, body, nil)
	t.observe("insert", t.name, time.Since(start), err)
	if err != nil {
		return wrap("insert", t.name, keyOf(src), err)
	}
	src.meta().ETag = ETag(resp.ETag)
	return nil
}

// Update replaces a row, on condition that it is still at the ETag src
// carries. ErrConflict if it changed since, ErrNotFound if it is gone.
func (t *Table) Update(ctx context.Context, src Entity) error {
	return t.update(ctx, src, "update", aztables.UpdateModeReplace)
}

// Merge sets the properties src has (a zero time or an empty string is
// none) on a row, on condition that it is still at the ETag src carries;
// the row's other properties stay. ErrConflict if it changed since.
func (t *Table) Merge(ctx context.Context, src Entity) error {
	return t.update(ctx, src, "merge", aztables.UpdateModeMerge)
}

func (t *Table) update(ctx context.Context, src Entity, op string, mode aztables.UpdateMode) error {
	etag := src.meta().ETag
	if etag == "" {
		return fmt.Errorf("tablestore: %s %s %s: no ETag; read the row first (or use Upsert for blind writes)", op, t.name, keyOf(src))
	}
	body, err := marshal(src)
	if err != nil {
		return err
	}
	e := azcore.ETag(etag)
	start := time.Now()
	resp, err := t.client.UpdateEntity(ctx, body, &aztables.UpdateEntityOptions{IfMatch: &e, UpdateMode: mode})
	t.observe(op, t.name, time.Since(start), err)
	if err != nil {
		return wrap(op, t.name, keyOf(src), err)
	}
	src.meta().ETag = ETag(resp.ETag)
	return nil
}

// Upsert writes a row whatever its current state. Use it only where a blind
// overwrite is what is meant (seeding, idempotent markers).
func (t *Table) Upsert(ctx context.Context, src Entity) error {
	body, err := marshal(src)
	if err != nil {
		return err
	}
	start := time.Now()
	resp, err := t.client.UpsertEntity(ctx, body, &aztables.UpsertEntityOptions{UpdateMode: aztables.UpdateModeReplace})
	t.observe("upsert", t.name, time.Since(start), err)
	if err != nil {
		return wrap("upsert", t.name, keyOf(src), err)
	}
	src.meta().ETag = ETag(resp.ETag)
	return nil
}

// Delete removes a row if it is still at etag (AnyETag: whatever its state).
func (t *Table) Delete(ctx context.Context, partitionKey, rowKey string, etag ETag) error {
	if etag == "" {
		return fmt.Errorf("tablestore: delete %s %s/%s: no ETag; pass the row's ETag or AnyETag", t.name, partitionKey, rowKey)
	}
	e := azcore.ETag(etag)
	start := time.Now()
	_, err := t.client.DeleteEntity(ctx, partitionKey, rowKey, &aztables.DeleteEntityOptions{IfMatch: &e})
	t.observe("delete", t.name, time.Since(start), err)
	return wrap("delete", t.name, partitionKey+"/"+rowKey, err)
}

// Query selects rows. The zero Query reads the whole table.
type Query struct {
	Filter Filter
	Select []string // property names; empty reads all
	Top    int32    // rows per page, at most 1000; 0 lets the service choose
	// Served, when set, is told the service's own clock (its Date header,
	// whole seconds) as each page is answered, for readers that ask next
	// time for rows changed since.
	Served func(time.Time)
}

// Rows iterates over every row the query matches, page after page. A row
// that cannot be decoded (written by another program with a wrong type) is
// yielded as a *RowError and iteration goes on; any other error ends it.
func Rows[T any, PT interface {
	*T
	Entity
}](ctx context.Context, t *Table, q Query) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		var token Continuation
		var zero T
		for {
			page, bad, next, err := readPage[T, PT](ctx, t, q, token)
			if err != nil {
				yield(zero, err)
				return
			}
			for _, row := range page {
				if !yield(row, nil) {
					return
				}
			}
			for _, rowErr := range bad {
				if !yield(zero, rowErr) {
					return
				}
			}
			if next.IsZero() {
				return
			}
			token = next
		}
	}
}

// RowError is a row that could not be decoded. The query goes on past it.
type RowError struct {
	PartitionKey, RowKey string
	Err                  error
}

func (e *RowError) Error() string { return e.Err.Error() }
func (e *RowError) Unwrap() error { return e.Err }

// All collects every row of a query; it fails on the first row that cannot
// be decoded. Use Rows to skip such rows, or Page for large results.
func All[T any, PT interface {
	*T
	Entity
}](ctx context.Context, t *Table, q Query) ([]T, error) {
	var out []T
	for row, err := range Rows[T, PT](ctx, t, q) {
		if err != nil {
			return nil, err
		}
		out = append(out, row)
	}
	return out, nil
}

// Continuation marks where the next page of a query starts.
type Continuation struct {
	NextPartitionKey string
	NextRowKey       string
}

// IsZero reports whether there is no further page.
func (c Continuation) IsZero() bool { return c.NextPartitionKey == "" && c.NextRowKey == "" }

// Page reads up to one page of rows starting at from. The service may return
// an empty page that still has a continuation; Page keeps reading until it
// has rows or there are no more, so an empty result means the end.
func Page[T any, PT interface {
	*T
	Entity
}](ctx context.Context, t *Table, q Query, from Continuation) ([]T, Continuation, error) {
	for {
		rows, bad, next, err := readPage[T, PT](ctx, t, q, from)
		if err == nil && len(bad) > 0 {
			err = bad[0]
		}
		if err != nil || len(rows) > 0 || next.IsZero() {
			return rows, next, err
		}
		from = next
	}
}

// PageSkipping is Page that skips rows it cannot decode and returns them
// beside the page, for the caller to report.
func PageSkipping[T any, PT interface {
	*T
	Entity
}](ctx context.Context, t *Table, q Query, from Continuation) ([]T, []*RowError, Continuation, error) {
	var skipped []*RowError
	for {
		rows, bad, next, err := readPage[T, PT](ctx, t, q, from)
		skipped = append(skipped, bad...)
		if err != nil || len(rows) > 0 || next.IsZero() {
			return rows, skipped, next, err
		}
		from = next
	}
}

func readPage[T any, PT interface {
	*T
	Entity
}](ctx context.Context, t *Table, q Query, from Continuation) ([]T, []*RowError, Continuation, error) {
	if t.wire != nil {
		start := time.Now()
		page, err := t.wire.query(ctx, t.name, q, from)
		// Rows written large: the same page again in fewer rows.
		for errors.Is(err, errPageTooLarge) && (q.Top == 0 || q.Top > 1) {
			q.Top = max(1, min(pageRows(q.Top), 1000)/16)
			page, err = t.wire.query(ctx, t.name, q, from)
		}
		t.observe("query", t.name, time.Since(start), err)
		if err != nil {
			return nil, nil, Continuation{}, wrap("query", t.name, "", err)
		}
		if q.Served != nil && !page.Served.IsZero() {
			q.Served(page.Served)
		}
		rows, bad := decodeRows[T, PT](t, page.Rows)
		return rows, bad, page.Next, nil
	}
	opts := &aztables.ListEntitiesOptions{}
	if q.Filter != "" {
		f := string(q.Filter)
		opts.Filter = &f
	}
	if len(q.Select) > 0 {
		s := strings.Join(q.Select, ",")
		opts.Select = &s
	}
	if q.Top > 0 {
		top := min(q.Top, 1000)
		opts.Top = &top
	}
	if !from.IsZero() {
		opts.NextPartitionKey = &from.NextPartitionKey
		opts.NextRowKey = &from.NextRowKey
	}
	var raw *http.Response
	if q.Served != nil {
		ctx = policy.WithCaptureResponse(ctx, &raw)
	}
	start := time.Now()
	resp, err := t.client.NewListEntitiesPager(opts).NextPage(ctx)
	t.observe("query", t.name, time.Since(start), err)
	if err != nil {
		return nil, nil, Continuation{}, wrap("query", t.name, "", err)
	}
	if raw != nil {
		if at, err := http.ParseTime(raw.Header.Get("Date")); err == nil {
			q.Served(at)
		}
	}
	rows, bad := decodeRows[T, PT](t, resp.Entities)
	var next Continuation
	if resp.NextPartitionKey != nil {
		next.NextPartitionKey = *resp.NextPartitionKey
	}
	if resp.NextRowKey != nil {
		next.NextRowKey = *resp.NextRowKey
	}
	return rows, bad, next, nil
}

// pageRows is a query's rows per page: Top, or the service's 1,000.
func pageRows(top int32) int32 {
	if top == 0 {
		return 1000
	}
	return top
}

// decodeRows decodes a page's rows; a row that does not decode is a
// RowError, and the others are still read.
func decodeRows[T any, PT interface {
	*T
	Entity
}, R ~[]byte](t *Table, page []R) ([]T, []*RowError) {
	t.observeRows(t.name, len(page))
	rows := make([]T, 0, len(page))
	var bad []*RowError
	for _, raw := range page {
		var row T
		if err := unmarshal(raw, PT(&row), ""); err != nil {
			m := PT(&row).meta()
			bad = append(bad, &RowError{PartitionKey: m.PartitionKey, RowKey: m.RowKey, Err: err})
			continue
		}
		rows = append(rows, row)
	}
	return rows, bad
}

func keyOf(e Entity) string {
	m := e.meta()
	return m.PartitionKey + "/" + m.RowKey
}

// Error is a failed call, with the sentinel that classifies it.
type Error struct {
	Op     string
	Table  string
	Key    string
	Status int
	Code   string
	Kind   error // one of the sentinels, or nil when unclassified
	Err    error
}

func (e *Error) Error() string {
	msg := "table storage: " + e.Op
	if e.Table != "" {
		msg += " " + e.Table
	}
	if e.Key != "" {
		msg += " " + e.Key
	}
	switch {
	case e.Kind != nil && e.Code != "":
		return fmt.Sprintf("%s: %v (%d %s)", msg, e.Kind, e.Status, e.Code)
	case e.Kind != nil:
		return fmt.Sprintf("%s: %v", msg, e.Kind)
	case e.Status != 0:
		return fmt.Sprintf("%s: HTTP %d %s", msg, e.Status, e.Code)
	}
	return fmt.Sprintf("%s: %v", msg, e.Err)
}

func (e *Error) Unwrap() []error {
	if e.Kind == nil {
		return []error{e.Err}
	}
	return []error{e.Kind, e.Err}
}

func wrap(op, table, key string, err error) error {
	if err == nil {
		return nil
	}
	e := &Error{Op: op, Table: table, Key: key, Err: err}
	var re *azcore.ResponseError
	if errors.As(err, &re) {
		e.Status, e.Code = re.StatusCode, re.ErrorCode
		e.Kind = kindOf(re.StatusCode, re.ErrorCode)
	}
	return e
}

func kindOf(status int, code string) error {
	switch status {
	case http.StatusNotFound:
		return ErrNotFound
	case http.StatusPreconditionFailed:
		return ErrConflict
	case http.StatusConflict:
		if code == string(aztables.EntityAlreadyExists) || code == "EntityAlreadyExists" {
			return ErrExists
		}
		return nil
	case http.StatusBadRequest:
		return ErrInvalid
	}
	return nil
}

// ListTables returns the full names of the tables that carry this
// service's prefix.
func (s *Service) ListTables(ctx context.Context) ([]string, error) {
	var names []string
	opts := &aztables.ListTablesOptions{}
	if s.prefix != "" {
		f := string(And(Ge("TableName", s.prefix), Lt("TableName", prefixEnd(s.prefix))))
		opts.Filter = &f
	}
	pager := s.client.NewListTablesPager(opts)
	for pager.More() {
		start := time.Now()
		page, err := pager.NextPage(ctx)
		s.observe("list_tables", "", time.Since(start), err)
		if err != nil {
			return nil, wrap("list tables", "", "", err)
		}
		for _, t := range page.Tables {
			if t.Name != nil {
				names = append(names, *t.Name)
			}
		}
	}
	return names, nil
}

// Unreachable says whether err is storage not answering (or answering
// with an error of its own), rather than a row's state: worth a 503.
func Unreachable(err error) bool {
	var te *Error
	return errors.As(err, &te) && te.Kind == nil
}

type budgetKey struct{}

// WithBudget makes every storage call made under ctx end by t, its tries
// and their retries included, while ctx itself goes on: a web request's
// storage calls all end within the request's budget, and what else it
// waits for (an ARM call, a mail server) keeps its own deadline.
func WithBudget(ctx context.Context, t time.Time) context.Context {
	return context.WithValue(ctx, budgetKey{}, t)
}

// budgetPolicy applies WithBudget's deadline to each call, once for all
// its tries.
type budgetPolicy struct{}

func (budgetPolicy) Do(req *policy.Request) (*http.Response, error) {
	t, ok := req.Raw().Context().Value(budgetKey{}).(time.Time)
	if !ok {
		return req.Next()
	}
	ctx, cancel := context.WithDeadline(req.Raw().Context(), t)
	defer cancel()
	return req.WithContext(ctx).Next()
}
