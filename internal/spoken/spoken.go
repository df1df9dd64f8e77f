// Package spoken is how Fusebox says numbers and durations to people, the
// same way on every page, mail and error.
package spoken

import (
	"strings"
	"time"
)

// Duration prints 30s, 5m or 1h30m rather than Go's 5m0s.
func Duration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
