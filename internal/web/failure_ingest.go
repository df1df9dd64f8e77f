package web

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/fusebox/fusebox/internal/storage"
	"github.com/fusebox/fusebox/internal/telemetry"
	"github.com/fusebox/fusebox/internal/trigger"
)

// requestWriter is a writer id no other request uses: this process's
// random id and a counter.
func (s *Server) requestWriter() string {
	return fmt.Sprintf("api.%s.%d", s.instance, s.requests.Add(1))
}

// IngestMaxBytes bounds a failure report request.
const IngestMaxBytes = 1 << 20

// ingestMaxItems bounds the items of one request.
const ingestMaxItems = 10_000

type ingestRequest struct {
	Failures []ingestItem `json:"failures"`
}

// ingestItem decodes in the same pass as the request; a field of the wrong
// type marks the item bad instead of failing the whole request.
type ingestItem struct {
	App       lenient[string] `json:"app"`
	Function  lenient[string] `json:"function"`
	At        lenient[string] `json:"at"`
	Count     lenient[int]    `json:"count"`
	Successes lenient[int]    `json:"successes"`
	Error     lenient[string] `json:"error"`
	notObj    bool
}

func (it *ingestItem) UnmarshalJSON(b []byte) error {
	if len(b) == 0 || b[0] != '{' {
		it.notObj = true
		return nil
	}
	type plain ingestItem
	return json.Unmarshal(b, (*plain)(it))
}

// lenient holds a JSON value of type T, or notes that the value had
// another type.
type lenient[T any] struct {
	v   T
	set bool
	bad bool
}

func (l *lenient[T]) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	l.set = true
	if json.Unmarshal(b, &l.v) != nil {
		l.bad = true
	}
	return nil
}

type itemError struct {
	Index int    `json:"index"`
	Error string `json:"error"`
}

type ingestResponse struct {
	Accepted  int         `json:"accepted"`  // items kept
	Failures  int         `json:"failures"`  // failures they count
	Successes int         `json:"successes"` // successes they count
	Rejected  []itemError `json:"rejected"`
	// NoCircuit counts the accepted items of functions without a circuit:
	// kept as failures per minute, shown on the Apps page, not counted by
	// any circuit.
	NoCircuit int `json:"no_circuit"`
}

// idempotencyKey is what a client may send so that a retried request is
// counted once: printable ASCII, as Stripe's and the IETF draft's keys are.
var idempotencyKey = regexp.MustCompile(`^[\x21-\x7e]{1,255}$`)

// failureIngest takes failure reports from functions: a batch of items, each
// checked on its own, so valid items are kept while invalid ones are
// reported by index. It answers 202 only once the valid items are stored.
func (s *Server) failureIngest(c echo.Context) error {
	appID, _ := c.Get(ctxApp).(string) // ingestGate verified its key
	if appID == "" {
		return echo.NewHTTPError(http.StatusUnauthorized, "Unknown API key.")
	}
	req, err := decodeIngest(c.Request().Body)
	if err != nil {
		return err
	}

	// The instance is for people (which instance fails?), never a key.
	instance := c.Request().Header.Get("X-Fusebox-Instance")
	if len(instance) > 100 || strings.ContainsFunc(instance, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return echo.NewHTTPError(http.StatusBadRequest, "X-Fusebox-Instance must be at most 100 printable characters, such as the WEBSITE_INSTANCE_ID.")
	}
	now := s.Now()
	// The writer id is Fusebox's own, one per request, so two requests
	// never replace each other's rows; with an Idempotency-Key it is derived
	// from the key, and items without a time take the first request's, so
	// a retry writes the very same rows again.
	writer := s.requestWriter()
	retry := false
	if key := c.Request().Header.Get("Idempotency-Key"); key != "" {
		if !idempotencyKey.MatchString(key) {
			return echo.NewHTTPError(http.StatusBadRequest, "Idempotency-Key must be 1 to 255 printable ASCII characters, such as a UUID.")
		}
		sum := sha256.Sum256([]byte(appID + "\x00" + key))
		hash := hex.EncodeToString(sum[:16])
		first, err := s.Idempotency.ClaimIdempotency(c.Request().Context(), hash, now)
		if err != nil {
			return unavailable(err)
		}
		retry = first.Before(now)
		now, writer = first, "idem."+hash
	}
	reports, index, resp := validItems(req, appID, now)
	for i := range reports {
		reports[i].TraceParent = telemetry.TraceParent(c.Request().Context())
		reports[i].Instance = instance
	}
	routed, err := s.Ingest.Route(c.Request().Context(), appID, reports, now)
	if err != nil {
		return unavailable(err)
	}
	refuse := func(i int, why string) {
		resp.Rejected = append(resp.Rejected, itemError{Index: index[i], Error: why})
		resp.Accepted--
		resp.Failures -= reports[i].Count
		resp.Successes -= reports[i].Successes
	}
	for i, why := range routed.Refused {
		refuse(i, why)
	}
	resp.NoCircuit = routed.Tallied()
	if resp.Accepted == 0 {
		sortRejected(resp.Rejected)
		return c.JSON(http.StatusBadRequest, resp)
	}
	if !retry {
		// Tallies first: a retry of this request (same Idempotency-Key)
		// adds none, so they must be kept before anything can fail. One
		// that cannot be kept now refuses its own items, for the client to
		// send again, and no more.
		for _, t := range s.Ingest.Keep(c.Request().Context(), appID, routed.Tallies) {
			for _, i := range t.Items {
				refuse(i, t.Function+" has no circuit, and its failures per minute could not be kept now: send this item again")
			}
			resp.NoCircuit -= len(t.Items)
		}
		if resp.Accepted == 0 {
			return unavailable(errors.New("ingest: no tally could be kept"))
		}
	}
	if len(routed.Counted) > 0 {
		if err := s.Failures.Record(c.Request().Context(), writer, routed.Counted); err != nil {
			return unavailable(err)
		}
	}
	sortRejected(resp.Rejected)
	s.Metrics.ObserveIngest(resp.Failures, len(resp.Rejected))
	return c.JSON(http.StatusAccepted, resp)
}

func sortRejected(r []itemError) {
	sort.Slice(r, func(a, b int) bool { return r[a].Index < r[b].Index })
}

// decodeIngest reads a report's body; what it refuses, it refuses whole,
// with an *echo.HTTPError that says how to send it.
func decodeIngest(body io.Reader) (ingestRequest, error) {
	var req ingestRequest
	if err := json.NewDecoder(body).Decode(&req); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return req, echo.NewHTTPError(http.StatusRequestEntityTooLarge, fmt.Sprintf("The body is larger than %d bytes; send smaller batches.", IngestMaxBytes))
		}
		return req, echo.NewHTTPError(http.StatusBadRequest, `The body must be JSON: {"failures": [{"function": "Name", "at": "2026-11-30T09:00:00Z", "count": 1}]}.`)
	}
	if len(req.Failures) > ingestMaxItems {
		return req, echo.NewHTTPError(http.StatusRequestEntityTooLarge, fmt.Sprintf("At most %d items per request.", ingestMaxItems))
	}
	return req, nil
}

// validItems checks each item on its own: the reports to keep, and the
// answer, which names every refused item by index.
func validItems(req ingestRequest, appID string, now time.Time) ([]storage.Report, []int, ingestResponse) {
	resp := ingestResponse{Rejected: []itemError{}}
	var reports []storage.Report
	var index []int // of each report's item
	for i, it := range req.Failures {
		problem := ""
		var r storage.Report
		if it.notObj {
			problem = `must be an object such as {"function": "Name", "at": "2026-11-30T09:00:00Z", "count": 1}`
		} else {
			r, problem = validItem(it, appID, now)
		}
		if problem != "" {
			resp.Rejected = append(resp.Rejected, itemError{Index: i, Error: problem})
			continue
		}
		reports = append(reports, r)
		index = append(index, i)
		resp.Accepted++
		resp.Failures += r.Count
		resp.Successes += r.Successes
	}
	return reports, index, resp
}

func validItem(it ingestItem, appID string, now time.Time) (storage.Report, string) {
	switch {
	case it.App.bad, it.Function.bad, it.At.bad, it.Error.bad:
		return storage.Report{}, "app, function, at and error must be strings"
	case it.Count.bad:
		return storage.Report{}, "count must be a whole number"
	case it.Successes.bad:
		return storage.Report{}, "successes must be a whole number"
	}
	// An item is one failure unless it says otherwise; one that reports
	// successes only counts no failure.
	count := 1
	if it.Count.set {
		count = it.Count.v
	} else if it.Successes.set {
		count = 0
	}
	successes := it.Successes.v
	at := now
	if it.At.v != "" {
		t, err := time.Parse(time.RFC3339Nano, it.At.v)
		if err != nil {
			return storage.Report{}, "at must be an RFC 3339 time such as 2026-11-30T09:00:00Z"
		}
		at = t
	}
	switch {
	case it.App.v != "" && it.App.v != appID:
		return storage.Report{}, fmt.Sprintf("app %q does not match the key, which belongs to %q", it.App.v, appID)
	case !trigger.ValidName(it.Function.v):
		return storage.Report{}, "function must be a function name: " + trigger.NameRule
	case count < 0 || count > 100_000 || (count == 0 && !it.Successes.set):
		return storage.Report{}, "count must be between 1 and 100000 (or 0 with successes)"
	case successes < 0 || successes > 1_000_000:
		return storage.Report{}, "successes must be between 0 and 1000000"
	case count == 0 && successes == 0:
		return storage.Report{}, "the item counts nothing: give count or successes"
	case at.Before(now.Add(-24 * time.Hour)):
		return storage.Report{}, "at is more than 24 hours ago"
	case at.After(now.Add(storage.MaxSkew)):
		return storage.Report{}, fmt.Sprintf("at is more than %s in the future; check the sender's clock", storage.MaxSkew)
	}
	return storage.Report{App: appID, Function: it.Function.v, Second: at, Count: count, Successes: successes, Sample: it.Error.v}, ""
}

// unavailable is the answer when storage cannot take the request: 503 with
// a hint to retry, never a 202 for data that was not kept.
func unavailable(err error) error {
	return echo.NewHTTPError(http.StatusServiceUnavailable, "Storage is not answering; nothing was stored. Retry shortly.").SetInternal(err)
}
