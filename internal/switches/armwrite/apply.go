package armwrite

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"sync"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"

	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/egress"
)

// Clients keeps one SDK client per subscription: a client is safe for
// concurrent use, and each costs a pipeline to build.
type Clients[C any] struct {
	New func(subscription string) (*C, error)
	// Package and Resource word the errors of For: "appservice", "site".
	Package, Resource string

	mu sync.Mutex
	m  map[string]*C
}

// Get returns the subscription's client, building it the first time.
func (c *Clients[C]) Get(subscription string) (*C, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cl, ok := c.m[subscription]; ok {
		return cl, nil
	}
	cl, err := c.New(subscription)
	if err != nil {
		return nil, err
	}
	if c.m == nil {
		c.m = map[string]*C{}
	}
	c.m[subscription] = cl
	return cl, nil
}

// For returns the client for app, which must name its subscription,
// resource group and resource.
func (c *Clients[C]) For(app circuit.App) (*C, error) {
	if app.SubscriptionID == "" || app.ResourceGroup == "" || app.Site == "" {
		return nil, fmt.Errorf("%s: app %s needs a subscription, resource group and %s", c.Package, app.ID, c.Resource)
	}
	cl, err := c.Get(app.SubscriptionID)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", c.Package, err)
	}
	return cl, nil
}

// Change is one switch's Apply, in the steps every ARM switch takes: ARM
// has no partial update and no ETag on what the switches write, so each
// reads the whole resource, merges its keys in, writes the whole back and
// reads again to see that nobody replaced it.
type Change[T any] struct {
	Read func(context.Context) (T, error)
	// Merge switches what was read as wanted, and says whether anything
	// changed: nothing changed is no write (and no restart).
	Merge func(T) (next T, changed bool, err error)
	Write func(context.Context, T) error
	// Holds says whether what was read back is still as wanted.
	Holds func(T) (bool, error)
	// Replaced is the error when another writer replaced the write.
	Replaced error
}

// Apply runs c under p. A write is never replayed: after a busy answer, a
// time-out or a replaced write, the next attempt reads and merges afresh,
// so what someone else changed meanwhile (a deploy, a key rotation)
// survives. The caller's context bounds the whole call.
func Apply[T any](ctx context.Context, p Policy, c Change[T]) error {
	p = p.WithDefaults()
	var last error
	for attempt := range p.Attempts {
		if attempt > 0 {
			if err := Pause(ctx, attempt, p.RetryDelay, p.MaxRetryDelay); err != nil {
				return fmt.Errorf("%w (after: %w)", err, last)
			}
		}
		cur, err := c.Read(ctx)
		if err != nil {
			if !Retriable(err) {
				return err
			}
			last = err
			continue
		}
		next, changed, err := c.Merge(cur)
		if err != nil {
			return err
		}
		if !changed {
			return nil
		}
		if err := c.Write(ctx, next); err != nil {
			if !Retriable(err) {
				return err
			}
			last = err
			continue
		}
		after, err := c.Read(ctx)
		if err != nil {
			last = err
			continue // the next attempt reads again and finds it done, or not
		}
		ok, err := c.Holds(after)
		if err != nil {
			return err
		}
		if !ok {
			last = c.Replaced
			continue
		}
		return nil
	}
	return last
}

// Target is what a switch acts on, named for errors a person can act on.
type Target struct {
	Package string // the switch, as the prefix of its errors: "appservice"
	Name    string // the site (site/slot) or container app
	Scope   string // its ARM resource ID
	Grant   string // the role to give Fusebox's identity when ARM answers 403
	Needs   string // the permissions in that role a switch uses
	Gone    string // what to ask when ARM answers 404
}

// Error is a switch failure worded for a page or a log. It says what
// Fusebox was doing, to what, and what to do; never what the server
// answered, which can carry anything. It unwraps to the SDK's error, so
// Retriable and errors.As still see the answer.
type Error struct {
	msg       string
	err       error
	permanent bool
}

func (e *Error) Error() string { return e.msg }

func (e *Error) Unwrap() []error {
	if e.permanent {
		return []error{e.err, ErrPermanent}
	}
	return []error{e.err}
}

// errorCode is the shape of ARM's error codes (AuthorizationFailed,
// ResourceNotFound): anything else in that field is not repeated.
var errorCode = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9.]{0,63}$`)

// Describe words err, met while doing something to t.
func (t Target) Describe(doing string, err error) error {
	var re *azcore.ResponseError
	if !errors.As(err, &re) {
		return &Error{msg: fmt.Sprintf("%s: %s %s: %s", t.Package, doing, t.Name, egress.Class(err)), err: err}
	}
	status := fmt.Sprint(re.StatusCode)
	if errorCode.MatchString(re.ErrorCode) {
		status += " " + re.ErrorCode
	}
	switch re.StatusCode {
	case http.StatusForbidden:
		return &Error{msg: fmt.Sprintf("%s: Fusebox's identity may not %s %s (%s): give it %s on %s (it needs %s)", t.Package, doing, t.Name, status, t.Grant, t.Scope, t.Needs), err: err, permanent: true}
	case http.StatusUnauthorized:
		return &Error{msg: fmt.Sprintf("%s: Azure did not accept Fusebox's credential to %s %s (%s): check the managed identity or AZURE_* settings", t.Package, doing, t.Name, status), err: err, permanent: true}
	case http.StatusNotFound:
		return &Error{msg: fmt.Sprintf("%s: %s was not found at %s (%s): %s", t.Package, t.Name, t.Scope, status, t.Gone), err: err, permanent: true}
	}
	return &Error{msg: fmt.Sprintf("%s: %s %s: ARM answered %s", t.Package, doing, t.Name, status), err: err}
}
