package otlp

import (
	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
)

// MaxRecords is how many spans or log records one export may bring; the
// rest are refused with OTLP's partial success, for the exporter to log.
const MaxRecords = 10_000

// LimitTraces keeps the first max spans of req and says how many it cut.
func LimitTraces(req *coltracepb.ExportTraceServiceRequest, max int) (cut int) {
	for _, rs := range req.GetResourceSpans() {
		for _, ss := range rs.GetScopeSpans() {
			ss.Spans, max, cut = keepFirst(ss.Spans, max, cut)
		}
	}
	return cut
}

// LimitLogs keeps the first max log records of req and says how many it cut.
func LimitLogs(req *collogspb.ExportLogsServiceRequest, max int) (cut int) {
	for _, rl := range req.GetResourceLogs() {
		for _, sl := range rl.GetScopeLogs() {
			sl.LogRecords, max, cut = keepFirst(sl.LogRecords, max, cut)
		}
	}
	return cut
}

// keepFirst keeps at most left of s, and counts what it drops.
func keepFirst[T any](s []T, left, cut int) ([]T, int, int) {
	if len(s) > left {
		cut += len(s) - left
		s = s[:left]
	}
	return s, left - len(s), cut
}
