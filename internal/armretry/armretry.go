// Package armretry holds what the ARM switches share about retrying a
// read-merge-write against Azure Resource Manager: which answers are worth
// another try, and how long to wait before it. It imports no resource
// provider's SDK, so each switch pays only for its own.
package armretry

import (
	"context"
	"errors"
	"math/rand/v2"
	"net/http"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"

	"github.com/fusebox/fusebox/internal/clock"
)

// Retriable reports whether another try may succeed without anyone acting:
// a time-out, 409 (someone else is changing the resource), 408, 429, 5xx.
func Retriable(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	var re *azcore.ResponseError
	if errors.As(err, &re) {
		switch re.StatusCode {
		case http.StatusConflict, http.StatusTooManyRequests, http.StatusRequestTimeout:
			return true
		}
		return re.StatusCode >= 500
	}
	return false
}

// Pause waits before the attempt-th retry: first × 2^(attempt−1), capped,
// with ±20 % jitter, or until ctx ends.
func Pause(ctx context.Context, attempt int, first, most time.Duration) error {
	d := min(first<<min(attempt-1, 20), most)
	return clock.Real{}.Sleep(ctx, time.Duration(float64(d)*(0.8+0.4*rand.Float64())))
}

// ErrPermanent marks answers that retrying will not change.
var ErrPermanent = errors.New("retrying will not help until this is fixed")
