package web

import (
	"testing"
	"time"
)

func TestShortDuration(t *testing.T) {
	tests := map[time.Duration]string{
		30 * time.Second:            "30s",
		time.Minute:                 "1m",
		5 * time.Minute:             "5m",
		90 * time.Second:            "1m30s",
		time.Hour:                   "1h",
		time.Hour + 30*time.Minute:  "1h30m",
		2*time.Hour + 5*time.Second: "2h0m5s",
		1500 * time.Millisecond:     "1.5s",
	}
	for d, want := range tests {
		if got := shortDuration(d); got != want {
			t.Errorf("shortDuration(%v) = %q, want %q", d, got, want)
		}
	}
}
