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
	left := max
	for _, rs := range req.GetResourceSpans() {
		for _, ss := range rs.GetScopeSpans() {
			n := len(ss.Spans)
			if n > left {
				cut += n - left
				ss.Spans = ss.Spans[:left]
			}
			left -= len(ss.Spans)
		}
	}
	return cut
}

// LimitLogs keeps the first max log records of req and says how many it cut.
func LimitLogs(req *collogspb.ExportLogsServiceRequest, max int) (cut int) {
	left := max
	for _, rl := range req.GetResourceLogs() {
		for _, sl := range rl.GetScopeLogs() {
			n := len(sl.LogRecords)
			if n > left {
				cut += n - left
				sl.LogRecords = sl.LogRecords[:left]
			}
			left -= len(sl.LogRecords)
		}
	}
	return cut
}
