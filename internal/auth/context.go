package auth

import "context"

// principalKey carries the principal a piece of work acts for.
type principalKey struct{}

// WithPrincipal is ctx acting for p: domain services ask it who is asking.
func WithPrincipal(ctx context.Context, p Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// PrincipalFrom is the principal ctx acts for; false when none was set,
// which a service answers by refusing (deny by default).
func PrincipalFrom(ctx context.Context) (Principal, bool) {
	p, ok := ctx.Value(principalKey{}).(Principal)
	return p, ok
}

// System is Fusebox's own work (its loops, the demo's seeding): named,
// so that what it does is told apart from a person's, and allowed what
// an admin is.
var System = Principal{Subject: "fusebox", Name: "Fusebox", Role: RoleAdmin, Provider: "system"}
