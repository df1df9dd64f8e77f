package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/fusebox/fusebox/internal/ingest"
	"github.com/fusebox/fusebox/internal/telemetry"
)

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

// failureIngest takes failure reports from functions over HTTP: it
// decodes them, and ingest.Service checks, routes and keeps them. It
// answers 202 only once the valid items are stored.
func (s *Intake) failureIngest(c echo.Context) error {
	appID, _ := c.Get(ctxApp).(string) // ingestGate verified its key
	if appID == "" {
		return echo.NewHTTPError(http.StatusUnauthorized, "Unknown API key.")
	}
	req, err := decodeIngest(c.Request().Body)
	if err != nil {
		return err
	}
	instance := c.Request().Header.Get("X-Fusebox-Instance")
	if len(instance) > 100 || strings.ContainsFunc(instance, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return echo.NewHTTPError(http.StatusBadRequest, "X-Fusebox-Instance must be at most 100 printable characters, such as the WEBSITE_INSTANCE_ID.")
	}
	b := ingest.Batch{AppID: appID, Items: make([]ingest.Item, len(req.Failures)), Instance: instance,
		TraceParent: reporterTrace(c.Request()), IdempotencyKey: c.Request().Header.Get("Idempotency-Key")}
	for i, it := range req.Failures {
		b.Items[i] = it.item()
	}
	res, err := s.Reports.Take(c.Request().Context(), b)
	switch {
	case errors.Is(err, ingest.ErrIdempotencyKey):
		return echo.NewHTTPError(http.StatusBadRequest, "Idempotency-Key must be 1 to 255 printable ASCII characters, such as a UUID.")
	case err != nil:
		return notTaken(c, err)
	case res.Accepted == 0:
		return c.JSON(http.StatusBadRequest, res)
	}
	s.Metrics.ObserveIngest(res.Failures, len(res.Rejected))
	return c.JSON(http.StatusAccepted, res)
}

// item is what the transport could read of an item; a field of the wrong
// type is the item's problem, not the request's.
func (it ingestItem) item() ingest.Item {
	switch {
	case it.notObj:
		return ingest.Item{Problem: `must be an object such as {"function": "Name", "at": "2026-11-30T09:00:00Z", "count": 1}`}
	case it.App.bad, it.Function.bad, it.At.bad, it.Error.bad:
		return ingest.Item{Problem: "app, function, at and error must be strings"}
	case it.Count.bad:
		return ingest.Item{Problem: "count must be a whole number"}
	case it.Successes.bad:
		return ingest.Item{Problem: "successes must be a whole number"}
	}
	out := ingest.Item{App: it.App.v, Function: it.Function.v, Sample: it.Error.v}
	if it.Count.set {
		out.Count = &it.Count.v
	}
	if it.Successes.set {
		out.Successes = &it.Successes.v
	}
	if it.At.v != "" {
		t, err := time.Parse(time.RFC3339Nano, it.At.v)
		if err != nil {
			return ingest.Item{Problem: "at must be an RFC 3339 time such as 2026-11-30T09:00:00Z"}
		}
		out.At = t
	}
	return out
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

// notTaken answers a report or export that ingest kept nothing of.
func notTaken(c echo.Context, err error) error {
	if errors.Is(err, ingest.ErrRowBudget) {
		return tooMany(c, "this app's reports wrote more rows in the last seconds than it may (FUSEBOX_INGEST_ROW_LIMIT); nothing was stored, retry after a second")
	}
	return unavailable(err)
}

// unavailable is the answer when storage cannot take the request: 503 with
// a hint to retry, never a 202 for data that was not kept.
func unavailable(err error) error {
	return echo.NewHTTPError(http.StatusServiceUnavailable, "Storage is not answering; nothing was stored. Retry shortly.").SetInternal(err)
}

// reporterTrace is the traceparent the failures are kept with: the
// caller's own, when it sent a valid one (its span is the reporting call,
// which Application Insights keeps as an item of the failing invocation's
// transaction, and a trip joins that trace under it), else this request's.
func reporterTrace(r *http.Request) string {
	if tp := telemetry.TraceParent(telemetry.WithRemoteParent(context.Background(), r.Header.Get("traceparent"))); tp != "" {
		return tp
	}
	return telemetry.TraceParent(r.Context())
}
