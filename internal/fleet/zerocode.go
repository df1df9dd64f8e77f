package fleet

import (
	"fmt"
	"slices"
	"strings"
)

// Zero-code reporting: the Functions host exports every invocation over
// OpenTelemetry to Fusebox (docs/opentelemetry.md) once four app settings
// say so. Writing them restarts the app. With
// APPLICATIONINSIGHTS_CONNECTION_STRING also set, the host sends to both
// Application Insights and Fusebox, in OpenTelemetry's format; C#
// in-process apps do not support it.

// ZeroCodeSettings are the app settings that send the host's telemetry to
// Fusebox at baseURL with the app's key.
func ZeroCodeSettings(baseURL, key string) map[string]string {
	return map[string]string{
		"AzureFunctionsJobHost__telemetryMode": "OpenTelemetry",
		"OTEL_EXPORTER_OTLP_ENDPOINT":          strings.TrimSuffix(baseURL, "/"),
		"OTEL_EXPORTER_OTLP_HEADERS":           "Authorization=Bearer " + key,
		"OTEL_EXPORTER_OTLP_PROTOCOL":          "http/protobuf",
	}
}

// ZeroCodeRefusal says why zero-code reporting must not be switched on for
// app appID with its current settings, or "" when it may: Fusebox changes
// no setting it did not write, and never lets its key go elsewhere. It
// refuses when
//   - any OTLP endpoint (OTEL_EXPORTER_OTLP_ENDPOINT or a signal's own
//     _TRACES_, _LOGS_, _METRICS_ENDPOINT) names somewhere other than
//     Fusebox: the headers Fusebox writes would go there with its key, or
//     its collector would lose the export;
//   - any OTLP headers setting holds what Fusebox did not write (another
//     collector's key would be lost, or override Fusebox's for a signal);
//   - a setting Fusebox writes holds another value (the telemetry mode,
//     the protocol).
//
// APPLICATIONINSIGHTS_* settings are never written, so never replaced.
// The reason names settings, never their values.
func ZeroCodeRefusal(current map[string]string, baseURL, appID string) string {
	base := strings.TrimSuffix(baseURL, "/")
	want := ZeroCodeSettings(baseURL, "")
	var endpoints, headers, others []string
	for k, v := range current {
		if v == "" {
			continue
		}
		name := strings.ToUpper(k)
		switch {
		case strings.HasPrefix(name, "OTEL_EXPORTER_OTLP_") && strings.HasSuffix(name, "ENDPOINT"):
			if !fusebox(v, base) {
				endpoints = append(endpoints, k)
			}
		case strings.HasPrefix(name, "OTEL_EXPORTER_OTLP_") && strings.HasSuffix(name, "HEADERS"):
			if name != "OTEL_EXPORTER_OTLP_HEADERS" || !fuseboxHeaders(v, appID) {
				headers = append(headers, k)
			}
		case name == "AZUREFUNCTIONSJOBHOST__TELEMETRYMODE" || name == "OTEL_EXPORTER_OTLP_PROTOCOL":
			if w := want[canonical(k, want)]; !strings.EqualFold(v, w) {
				others = append(others, k)
			}
		}
	}
	var why []string
	if len(endpoints) > 0 {
		slices.Sort(endpoints)
		why = append(why, strings.Join(endpoints, ", ")+" send OpenTelemetry elsewhere")
	}
	if len(headers) > 0 {
		slices.Sort(headers)
		why = append(why, strings.Join(headers, ", ")+" hold headers Fusebox did not write")
	}
	if len(others) > 0 {
		slices.Sort(others)
		why = append(why, strings.Join(others, ", ")+" are set otherwise")
	}
	if len(why) == 0 {
		return ""
	}
	return "the app's telemetry is set up already (" + strings.Join(why, "; ") + "): Fusebox changes no setting it did not write and sends its key nowhere else, so it leaves them as they are"
}

// fusebox says whether an OTLP endpoint is Fusebox's: its base URL, or a
// signal's path under it.
func fusebox(endpoint, base string) bool {
	e := strings.TrimSuffix(endpoint, "/")
	if strings.EqualFold(e, base) {
		return true
	}
	for _, signal := range []string{"/v1/traces", "/v1/logs", "/v1/metrics"} {
		if strings.EqualFold(e, base+signal) {
			return true
		}
	}
	return false
}

// fuseboxHeaders says whether an OTLP headers setting is the one Fusebox
// writes for appID: its key alone, as "Authorization=Bearer fbx_<app>_…".
func fuseboxHeaders(v, appID string) bool {
	rest, ok := strings.CutPrefix(v, "Authorization=Bearer fbx_"+appID+"_")
	return ok && rest != "" && !strings.ContainsAny(rest, ",= ")
}

// canonical is the key of want that k names, whatever its case.
func canonical(k string, want map[string]string) string {
	for w := range want {
		if strings.EqualFold(w, k) {
			return w
		}
	}
	return k
}

// ZeroCodeConflict is ZeroCodeRefusal as the check of the settings'
// read-merge-write: what the app has at the moment of writing decides.
func ZeroCodeConflict(baseURL, appID string) func(current map[string]string) error {
	return func(current map[string]string) error {
		if why := ZeroCodeRefusal(current, baseURL, appID); why != "" {
			return fmt.Errorf("%s", why)
		}
		return nil
	}
}
