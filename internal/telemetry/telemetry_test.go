package telemetry_test

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/fusebox/fusebox/internal/telemetry"
)

func TestSetupSaysWhatIsWrongWithTheEndpoint(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		want string // "" for no error
	}{
		{map[string]string{}, ""},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "localhost:4318"}, "give the collector's URL, such as http://localhost:4318"},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "ftp://collector"}, "OTEL_EXPORTER_OTLP_ENDPOINT"},
		{map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "::"}, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, "OTLP over HTTP only"},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_BSP_SCHEDULE_DELAY": "soon"}, "give milliseconds"},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_TRACES_EXPORTER": "none"}, ""},
	} {
		stop, err := telemetry.Setup(t.Context(), func(k string) string { return tc.env[k] }, "test", slog.New(slog.DiscardHandler))
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%v: %v", tc.env, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%v: got %v, want it to say %q", tc.env, err, tc.want)
		}
		if err == nil {
			if err := stop(t.Context()); err != nil {
				t.Errorf("%v: stop: %v", tc.env, err)
			}
		}
	}
}
