// Package armwrite holds what the ARM switches share about retrying a
// read-merge-write against Azure Resource Manager: which answers are worth
// another try, and how long to wait before it. It imports no resource
// provider's SDK, so each switch pays only for its own.
package armwrite

import (
	"context"
	"errors"
	"math/rand/v2"
	"net/http"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/arm"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/tracing"

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

// Policy is how a switch retries one Apply. Zero fields take the defaults.
type Policy struct {
	Attempts                  int           // of one Apply, each reading afresh; default 5
	TryTimeout                time.Duration // of each request; default 15s
	RetryDelay, MaxRetryDelay time.Duration // between attempts; defaults 1s and 20s
}

// WithDefaults fills the zero fields.
func (p Policy) WithDefaults() Policy {
	if p.Attempts <= 0 {
		p.Attempts = 5
	}
	if p.TryTimeout <= 0 {
		p.TryTimeout = 15 * time.Second
	}
	if p.RetryDelay <= 0 {
		p.RetryDelay = time.Second
	}
	if p.MaxRetryDelay <= 0 {
		p.MaxRetryDelay = 20 * time.Second
	}
	return p
}

// ClientOptions are the SDK options of a switch's clients: reads retried
// by the SDK a little (writes never: see Once), the transport replaced in
// tests.
func (p Policy) ClientOptions(transport policy.Transporter, tracing tracing.Provider) *arm.ClientOptions {
	opts := &arm.ClientOptions{ClientOptions: azcore.ClientOptions{
		Retry: policy.RetryOptions{
			MaxRetries: 2, TryTimeout: p.TryTimeout, RetryDelay: p.RetryDelay, MaxRetryDelay: p.MaxRetryDelay,
			StatusCodes: []int{http.StatusTooManyRequests, http.StatusRequestTimeout,
				http.StatusInternalServerError, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout},
		},
		TracingProvider: tracing,
	}}
	if transport != nil {
		opts.Transport = transport
	}
	return opts
}

// Once is a context in which the SDK makes one try of a request: a write
// is retried by the switch, which reads and merges again, never by
// replaying it.
func (p Policy) Once(ctx context.Context) context.Context {
	return policy.WithRetryOptions(ctx, policy.RetryOptions{MaxRetries: -1, TryTimeout: p.TryTimeout})
}

// Set returns props with each setting in set written (nil: removed), and
// whether that changed anything; props itself is not changed.
func Set(props map[string]*string, set map[string]*string) (map[string]*string, bool) {
	if len(set) == 0 {
		return props, false
	}
	next := make(map[string]*string, len(props)+len(set))
	for k, v := range props {
		next[k] = v
	}
	changed := false
	for k, v := range set {
		old, had := props[k]
		switch {
		case v == nil && had:
			delete(next, k)
			changed = true
		case v != nil && (!had || old == nil || *old != *v):
			val := *v
			next[k] = &val
			changed = true
		}
	}
	return next, changed
}

// HoldsSet says whether props hold every setting in set.
func HoldsSet(props map[string]*string, set map[string]*string) bool {
	for k, v := range set {
		old, had := props[k]
		if v == nil {
			if had {
				return false
			}
			continue
		}
		if !had || old == nil || *old != *v {
			return false
		}
	}
	return true
}
