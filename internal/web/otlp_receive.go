package web

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"sync"

	"github.com/labstack/echo/v4"
	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	colmetricspb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	_ "google.golang.org/grpc/encoding/gzip" // exporters may compress
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/fusebox/fusebox/internal/ingest"
	"github.com/fusebox/fusebox/internal/otlp"
)

// OTLPMaxBytes bounds an export, compressed and once decompressed: the
// host sends at most 512 records every 5 s, far below it.
const OTLPMaxBytes = 4 << 20

// OTLPExportsAtOnce and OTLPExportsAtOncePerApp bound the exports an
// instance decodes at once (exportSlots), OTLPExportReserve of them kept
// for apps that hold none; OTLPReadsAtOnce and OTLPReadsAtOncePerApp the
// bodies it reads at once, each within readWithin, before any decoding
// slot is taken: a slow upload holds no decoding slot.
const (
	OTLPExportsAtOnce       = 6
	OTLPExportsAtOncePerApp = 3
	OTLPExportReserve       = 2
	OTLPReadsAtOnce         = 16
	OTLPReadsAtOncePerApp   = 4
)

// OTLPPrefix is where the OTLP/HTTP paths are served too, for an
// OTEL_EXPORTER_OTLP_ENDPOINT that names a path.
const OTLPPrefix = "/otlp"

// The gRPC methods OTLP exporters call.
const (
	grpcTraces  = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"
	grpcLogs    = "/opentelemetry.proto.collector.logs.v1.LogsService/Export"
	grpcMetrics = "/opentelemetry.proto.collector.metrics.v1.MetricsService/Export"
)

// otlpGRPC serves OTLP/gRPC exports, behind the app's key, which decides
// the app (routes.go).
func (s *Intake) otlpGRPC() echo.HandlerFunc {
	g := grpc.NewServer(grpc.MaxRecvMsgSize(OTLPMaxBytes), grpc.ForceServerCodec(otlpCodec{}))
	g.RegisterService(&otlpTraceDesc, s)
	g.RegisterService(&otlpLogsDesc, s)
	g.RegisterService(&otlpMetricsDesc, s)
	return func(c echo.Context) error {
		appID, _ := c.Get(ctxApp).(string)
		r := c.Request().WithContext(context.WithValue(c.Request().Context(), otlpAppKey{}, appID))
		g.ServeHTTP(c.Response(), r)
		return nil
	}
}

// otlpBodyLimit refuses a body larger than OTLPMaxBytes.
func otlpBodyLimit() echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			r := c.Request()
			if r.ContentLength > OTLPMaxBytes {
				return echo.NewHTTPError(http.StatusRequestEntityTooLarge, fmt.Sprintf("An export may be at most %d bytes; the exporter's batch is far smaller by default.", OTLPMaxBytes))
			}
			r.Body = http.MaxBytesReader(c.Response(), r.Body, OTLPMaxBytes)
			return next(c)
		}
	}
}

// otlpHTTP takes an OTLP/HTTP export: protobuf, or JSON for people with
// curl; gzip or not. source "" is metrics, accepted and not read.
func (s *Intake) otlpHTTP(source otlp.Source) echo.HandlerFunc {
	return func(c echo.Context) error {
		appID, _ := c.Get(ctxApp).(string)
		ctype, _, _ := mime.ParseMediaType(c.Request().Header.Get("Content-Type"))
		if ctype != "application/x-protobuf" && ctype != "application/json" {
			return echo.NewHTTPError(http.StatusUnsupportedMediaType, "Send application/x-protobuf (OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf) or application/json.")
		}
		protocol, marshal := "http/protobuf", proto.Marshal
		if ctype == "application/json" {
			protocol, marshal = "http/json", protojson.Marshal
		}
		if source == "" {
			// Metrics are accepted and not read: their bytes cost nothing.
			s.Metrics.ObserveOTLP(appID, "metrics", protocol, s.Now())
			b, err := marshal(&colmetricspb.ExportMetricsServiceResponse{})
			if err != nil {
				return err
			}
			return c.Blob(http.StatusOK, ctype, b)
		}
		raw, err := readRaw(c.Request())
		if err != nil {
			return err
		}
		// Decoding copies what it keeps: the body's buffer is not read
		// after this handler.
		defer putBody(raw)
		var out proto.Message
		err = s.decoding.decode(c.Request().Context(), c, appID, func() error {
			body, err := inflate(raw, c.Request().Header.Get("Content-Encoding"))
			if err != nil {
				return err
			}
			out, err = s.decodeAndTake(c, source, appID, protocol, ctype, body)
			return err
		})
		if err != nil {
			return err
		}
		b, err := marshal(out)
		if err != nil {
			return err
		}
		return c.Blob(http.StatusOK, ctype, b)
	}
}

// decodeAndTake decodes an export's body and counts it.
func (s *Intake) decodeAndTake(c echo.Context, source otlp.Source, appID, protocol, ctype string, body []byte) (proto.Message, error) {
	var out proto.Message
	{
		switch source {
		case otlp.Traces:
			m, cut, err := decodeTraces(body, ctype)
			if err != nil {
				return nil, otlpRefused(err)
			}
			ans, err := s.takeTraces(c.Request().Context(), appID, protocol, m, cut)
			if err != nil {
				return nil, notTaken(c, err)
			}
			out = ans
		case otlp.Logs:
			req, cut, err := decodeLogs(body, ctype)
			if err != nil {
				return nil, otlpRefused(err)
			}
			ans, err := s.takeLogs(c.Request().Context(), appID, protocol, req, cut)
			if err != nil {
				return nil, notTaken(c, err)
			}
			out = ans
		}
	}
	return out, nil
}

// otlpRefused answers an export that does not decode, or would cost too
// much to: 413 says "smaller", which an exporter logs and does not retry.
func otlpRefused(err error) error {
	if errors.Is(err, otlp.ErrTooCostly) {
		return echo.NewHTTPError(http.StatusRequestEntityTooLarge, otlp.Describe(err))
	}
	return echo.NewHTTPError(http.StatusBadRequest, otlp.Describe(err))
}

// decodeTraces reads protobuf by otlp.DecodeTraces (no message built,
// spans past the limit left unread) and JSON weighed first, then cut.
func decodeTraces(body []byte, ctype string) (otlp.Mapped, int, error) {
	if ctype != "application/json" {
		return otlp.DecodeTraces(body)
	}
	req := &coltracepb.ExportTraceServiceRequest{}
	if err := decodeJSON(body, req); err != nil {
		return otlp.Mapped{}, 0, err
	}
	cut := otlp.LimitTraces(req, otlp.MaxRecords)
	return otlp.FromTraces(req), cut, nil
}

func decodeLogs(body []byte, ctype string) (*collogspb.ExportLogsServiceRequest, int, error) {
	if ctype != "application/json" {
		return otlp.DecodeLogs(body)
	}
	req := &collogspb.ExportLogsServiceRequest{}
	if err := decodeJSON(body, req); err != nil {
		return nil, 0, err
	}
	return req, otlp.LimitLogs(req, otlp.MaxRecords), nil
}

func decodeJSON(body []byte, m proto.Message) error {
	if err := otlp.WeighJSON(body); err != nil {
		return err
	}
	if protojson.Unmarshal(body, m) != nil {
		return otlp.ErrUnreadable
	}
	return nil
}

// readRaw reads a body as it came, at most OTLPMaxBytes; inflate
// gunzips it when it says so, at most OTLPMaxBytes again. Reading comes
// before a decoding slot is taken, inflating after.
func readRaw(r *http.Request) ([]byte, error) {
	switch r.Header.Get("Content-Encoding") {
	case "", "identity", "gzip":
	default:
		return nil, echo.NewHTTPError(http.StatusUnsupportedMediaType, "Send the body plain or gzip-compressed.")
	}
	b, err := readAtMost(r.Body, OTLPMaxBytes, r.ContentLength, true)
	return checkRead(b, err)
}

func inflate(raw []byte, encoding string) ([]byte, error) {
	if encoding != "gzip" {
		return raw, nil
	}
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		return nil, echo.NewHTTPError(http.StatusBadRequest, "The body says gzip and is not.")
	}
	defer zr.Close()
	return checkRead(readAtMost(zr, OTLPMaxBytes, 0, false))
}

func checkRead(b []byte, err error) ([]byte, error) {
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig), len(b) > OTLPMaxBytes:
		return nil, echo.NewHTTPError(http.StatusRequestEntityTooLarge, fmt.Sprintf("An export may be at most %d bytes, compressed or not.", OTLPMaxBytes))
	case err != nil:
		return nil, echo.NewHTTPError(http.StatusBadRequest, "The body could not be read.")
	}
	return b, nil
}

// readAtMost reads r to its end, at most limit+1 bytes. A plain body whose
// length is known is read into one buffer of that length instead of one
// grown by doubling (each growth a copy, each large one cleared): most of
// what reading an export cost.
func readAtMost(r io.Reader, limit int, length int64, plain bool) ([]byte, error) {
	if !plain || length <= 0 || length > int64(limit) {
		return io.ReadAll(io.LimitReader(r, int64(limit)+1))
	}
	b := getBody(int(length) + 1)[:length]
	if _, err := io.ReadFull(r, b); err != nil {
		return nil, err
	}
	// A body longer than it said is refused by net/http; one byte more
	// read here says so to the caller too.
	var one [1]byte
	if n, _ := r.Read(one[:]); n > 0 {
		return append(b, one[0]), nil
	}
	return b, nil
}

// bodies keeps export buffers for the next export: a host's is 100–250 kB,
// and one made and cleared for every export was a large share of what the
// collector had to do. Buffers larger than maxPooledBody are left to it.
var bodies sync.Pool

const maxPooledBody = 1 << 20

func getBody(n int) []byte {
	if p, ok := bodies.Get().(*[]byte); ok && cap(*p) >= n {
		return (*p)[:n]
	}
	return make([]byte, n)
}

func putBody(b []byte) {
	if cap(b) > 0 && cap(b) <= maxPooledBody {
		bodies.Put(&b)
	}
}

func (s *Intake) takeTraces(ctx context.Context, appID, protocol string, m otlp.Mapped, cut int) (*coltracepb.ExportTraceServiceResponse, error) {
	ans, err := s.OTLP.Take(ctx, ingest.Export{AppID: appID, Protocol: protocol, Mapped: m})
	if err != nil {
		return nil, err
	}
	s.Metrics.ObserveOTLP(appID, string(otlp.Traces), protocol, s.Now())
	rejected, msg := partial(ans, cut)
	out := &coltracepb.ExportTraceServiceResponse{}
	if rejected > 0 {
		out.PartialSuccess = &coltracepb.ExportTracePartialSuccess{RejectedSpans: rejected, ErrorMessage: msg}
	}
	return out, nil
}

func (s *Intake) takeLogs(ctx context.Context, appID, protocol string, req *collogspb.ExportLogsServiceRequest, cut int) (*collogspb.ExportLogsServiceResponse, error) {
	ans, err := s.OTLP.Take(ctx, ingest.Export{AppID: appID, Protocol: protocol, Mapped: otlp.FromLogs(req)})
	if err != nil {
		return nil, err
	}
	s.Metrics.ObserveOTLP(appID, string(otlp.Logs), protocol, s.Now())
	rejected, msg := partial(ans, cut)
	out := &collogspb.ExportLogsServiceResponse{}
	if rejected > 0 {
		out.PartialSuccess = &collogspb.ExportLogsPartialSuccess{RejectedLogRecords: rejected, ErrorMessage: msg}
	}
	return out, nil
}

// partial is OTLP's partial success: records cut for the limit, and
// invocations ingest refused.
func partial(ans ingest.Answer, cut int) (int64, string) {
	msg := ans.Message
	if cut > 0 {
		msg = fmt.Sprintf("%d records over the limit of %d per export were refused; send smaller batches. %s", cut, otlp.MaxRecords, msg)
	}
	return int64(cut + ans.Rejected), msg
}

// otlpAppKey is where the gRPC methods find the app whose key verified.
type otlpAppKey struct{}

// rawExport is an export's bytes as gRPC received them: the services below
// decode them with otlp.DecodeTraces and DecodeLogs, as OTLP/HTTP does,
// instead of letting gRPC build every record first.
type rawExport struct{ b []byte }

// otlpCodec hands rawExport the bytes and is protobuf for the rest.
type otlpCodec struct{}

func (otlpCodec) Name() string { return "proto" }

func (otlpCodec) Marshal(v any) ([]byte, error) {
	m, ok := v.(proto.Message)
	if !ok {
		return nil, fmt.Errorf("otlp codec: %T is no message", v)
	}
	return proto.Marshal(m)
}

func (otlpCodec) Unmarshal(data []byte, v any) error {
	switch m := v.(type) {
	case *rawExport:
		m.b = data // gRPC made this slice for this call alone
		return nil
	case proto.Message:
		return proto.Unmarshal(data, m)
	}
	return fmt.Errorf("otlp codec: %T is no message", v)
}

// exportMethod is a unary Export method that takes the raw bytes.
func exportMethod(take func(s *Intake, ctx context.Context, b []byte) (any, error)) grpc.MethodDesc {
	return grpc.MethodDesc{MethodName: "Export", Handler: func(srv any, ctx context.Context, dec func(any) error, _ grpc.UnaryServerInterceptor) (any, error) {
		var raw rawExport
		if err := dec(&raw); err != nil {
			return nil, err
		}
		// gRPC has read the message: a decoding slot is taken only now.
		s := srv.(*Intake)
		appID, _ := ctx.Value(otlpAppKey{}).(string)
		var out any
		err := s.decoding.decode(ctx, nil, appID, func() (err error) {
			out, err = take(s, ctx, raw.b)
			return err
		})
		if he, ok := err.(*echo.HTTPError); ok {
			return nil, status.Error(codes.Unavailable, fmt.Sprint(he.Message))
		}
		return out, err
	}}
}

var otlpTraceDesc = grpc.ServiceDesc{
	ServiceName: "opentelemetry.proto.collector.trace.v1.TraceService",
	HandlerType: (*any)(nil),
	Methods: []grpc.MethodDesc{exportMethod(func(s *Intake, ctx context.Context, b []byte) (any, error) {
		m, cut, err := otlp.DecodeTraces(b)
		if err != nil {
			return nil, grpcRefused(err)
		}
		appID, _ := ctx.Value(otlpAppKey{}).(string)
		out, err := s.takeTraces(ctx, appID, "grpc", m, cut)
		return out, grpcError(err)
	})},
}

var otlpLogsDesc = grpc.ServiceDesc{
	ServiceName: "opentelemetry.proto.collector.logs.v1.LogsService",
	HandlerType: (*any)(nil),
	Methods: []grpc.MethodDesc{exportMethod(func(s *Intake, ctx context.Context, b []byte) (any, error) {
		req, cut, err := otlp.DecodeLogs(b)
		if err != nil {
			return nil, grpcRefused(err)
		}
		appID, _ := ctx.Value(otlpAppKey{}).(string)
		out, err := s.takeLogs(ctx, appID, "grpc", req, cut)
		return out, grpcError(err)
	})},
}

func grpcRefused(err error) error {
	if errors.Is(err, otlp.ErrTooCostly) {
		return status.Error(codes.ResourceExhausted, otlp.Describe(err))
	}
	return status.Error(codes.InvalidArgument, otlp.Describe(err))
}

// otlpMetricsDesc accepts metrics and reads none (the bytes are not
// decoded): the host's exporter sends them on the same endpoint.
var otlpMetricsDesc = grpc.ServiceDesc{
	ServiceName: "opentelemetry.proto.collector.metrics.v1.MetricsService",
	HandlerType: (*any)(nil),
	Methods: []grpc.MethodDesc{exportMethod(func(*Intake, context.Context, []byte) (any, error) {
		return &colmetricspb.ExportMetricsServiceResponse{}, nil
	})},
}

func grpcError(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, ingest.ErrRowBudget) {
		return status.Error(codes.Unavailable, "this app's exports wrote more rows in the last seconds than it may; nothing was stored, send again in a second")
	}
	if errors.Is(err, ingest.ErrUnavailable) {
		return status.Error(codes.Unavailable, "storage is not answering; nothing was stored, send again")
	}
	return status.Error(codes.Internal, "the export could not be taken")
}

// grpcAnswers turns the key gate's HTTP errors into gRPC statuses (a
// trailers-only answer), which is what a gRPC exporter understands.
func grpcAnswers(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		err := next(c)
		if err == nil || c.Response().Committed {
			return err
		}
		code, msg := codes.Internal, "internal error"
		var he *echo.HTTPError
		if errors.As(err, &he) {
			code, msg = grpcCode(he.Code), fmt.Sprint(he.Message)
		}
		h := c.Response().Header()
		h.Set("Content-Type", "application/grpc")
		h.Set("Grpc-Status", strconv.Itoa(int(code)))
		h.Set("Grpc-Message", msg)
		c.Response().WriteHeader(http.StatusOK)
		return nil
	}
}

func grpcCode(httpStatus int) codes.Code {
	switch httpStatus {
	case http.StatusUnauthorized:
		return codes.Unauthenticated
	case http.StatusForbidden:
		return codes.PermissionDenied
	case http.StatusTooManyRequests, http.StatusRequestEntityTooLarge:
		return codes.ResourceExhausted
	case http.StatusServiceUnavailable:
		return codes.Unavailable
	case http.StatusBadRequest:
		return codes.InvalidArgument
	}
	return codes.Internal
}
