package fleet

import (
	"fmt"
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

// ZeroCodeConflict refuses to take an app's OpenTelemetry export from
// another collector: an endpoint set to somewhere else, or headers Fusebox
// did not write, stay as they are (their owner decides).
func ZeroCodeConflict(baseURL string) func(current map[string]string) error {
	return func(current map[string]string) error {
		if ep := current["OTEL_EXPORTER_OTLP_ENDPOINT"]; ep != "" && !strings.EqualFold(strings.TrimSuffix(ep, "/"), strings.TrimSuffix(baseURL, "/")) {
			return fmt.Errorf("the app exports OpenTelemetry elsewhere already (OTEL_EXPORTER_OTLP_ENDPOINT is set to another endpoint); Fusebox leaves it as it is")
		}
		return nil
	}
}
