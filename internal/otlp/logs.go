package otlp

import (
	"regexp"
	"strconv"
	"strings"
	"time"

	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	logspb "go.opentelemetry.io/proto/otlp/logs/v1"
)

// executed is the record the host writes when an invocation ends
// (category Function.<Name>, event id 3), formatted.
var executed = regexp.MustCompile(`^Executed '([^']{1,200})' \((Succeeded|Failed), Id=([0-9A-Za-z-]{1,64})(?:, Duration=([0-9.]{1,20})ms)?\)`)

// The same record when the exporter sends the template and its values.
const executedTemplate = "Executed '{functionName}' ({status}, Id={invocationId}"

// Why an "Executed" record names no invocation Fusebox trusts.
const (
	WhyUnreadable = "an Executed record in a form Fusebox does not read"
	WhyLogName    = "the Executed record names no function"
	WhyLongID     = "an invocation id longer than 64 bytes or with characters no id has"
)

// FromLogs finds the invocations among an export's log records: the
// host's "Executed 'Functions.<Name>' (Failed, Id=…, Duration=…ms)".
// Other records are not invocations.
func FromLogs(req *collogspb.ExportLogsServiceRequest) Mapped {
	m := Mapped{Source: Logs}
	for _, rl := range req.GetResourceLogs() {
		name, _ := attr(rl.GetResource().GetAttributes(), "service.name")
		m.serviceName(name)
		instance, _ := attr(rl.GetResource().GetAttributes(), "service.instance.id")
		for _, sl := range rl.GetScopeLogs() {
			for _, rec := range sl.GetLogRecords() {
				m.Records++
				inv, why, ok := fromLog(rec)
				m.add(inv, why, ok, instance)
			}
		}
	}
	return m
}

func fromLog(rec *logspb.LogRecord) (inv Invocation, why string, ok bool) {
	body := anyString(rec.GetBody())
	if !strings.HasPrefix(body, "Executed '") {
		return Invocation{}, "", false
	}
	var name, status, id, duration string
	if strings.HasPrefix(body, executedTemplate) {
		name, _ = attr(rec.GetAttributes(), "functionName")
		status, _ = attr(rec.GetAttributes(), "status")
		id, _ = attr(rec.GetAttributes(), "invocationId")
		duration = number(rec.GetAttributes(), "executionDuration")
	} else if g := executed.FindStringSubmatch(body); g != nil {
		name, status, id, duration = g[1], g[2], g[3], g[4]
	}
	if status != "Succeeded" && status != "Failed" || id == "" {
		return Invocation{}, WhyUnreadable, true
	}
	if !validID(id) {
		return Invocation{}, WhyLongID, true
	}
	function, named := functionName(name)
	if !named {
		return Invocation{}, WhyLogName, true
	}
	at := unixNano(rec.GetTimeUnixNano())
	if at.IsZero() {
		at = unixNano(rec.GetObservedTimeUnixNano())
	}
	if at.IsZero() {
		return Invocation{}, WhyNoTime, true
	}
	inv = Invocation{Function: function, ID: id, At: at, Start: at.Add(-millis(duration)), Failed: status == "Failed", Signal: ExecutedRecord}
	inv.Instance, _ = attr(rec.GetAttributes(), "faas.instance")
	if inv.Failed {
		msg, _ := attr(rec.GetAttributes(), "exception.message")
		inv.Sample = cut(msg, MaxSample)
		// OpenTelemetry's logging stamps a record with the trace context
		// current when it was written: the failed run's, so the group
		// links to it as a failed span's does. None when the exporter
		// sent none.
		inv.Trace = traceParent(rec.GetTraceId(), rec.GetSpanId())
	}
	return inv, "", true
}

// millis reads the record's duration in milliseconds ("153", "0.4711"),
// zero when it gives none or none that could be a run's (over a week).
func millis(s string) time.Duration {
	ms, err := strconv.ParseFloat(s, 64)
	if err != nil || ms < 0 || ms > float64(7*24*time.Hour/time.Millisecond) {
		return 0
	}
	return time.Duration(ms * float64(time.Millisecond))
}

// number is a numeric attribute as text, whichever type the exporter gave
// it (the host logs the duration as a double).
func number(kvs []*commonpb.KeyValue, key string) string {
	for _, kv := range kvs {
		if kv.GetKey() != key {
			continue
		}
		if d, ok := kv.GetValue().GetValue().(*commonpb.AnyValue_DoubleValue); ok {
			return strconv.FormatFloat(d.DoubleValue, 'f', -1, 64)
		}
		return anyString(kv.GetValue())
	}
	return ""
}
