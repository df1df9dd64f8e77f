package spoken_test

import (
	"testing"
	"time"

	"github.com/fusebox/fusebox/internal/spoken"
)

func TestDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		30 * time.Second: "30s", 5 * time.Minute: "5m", 90 * time.Minute: "1h30m", 2 * time.Hour: "2h", 61 * time.Second: "1m1s",
	} {
		if got := spoken.Duration(d); got != want {
			t.Errorf("Duration(%s) = %q, want %q", d, got, want)
		}
	}
}
