// Package access is Fusebox's one policy of who may see and change what:
// which apps, circuits, jobs, maintenance windows, channels, downstreams
// and tokens a principal sees and acts on, by the team that owns each.
// Domain services and the web layer ask it, with the principal carried in
// the context (auth.WithPrincipal); a context with no principal is
// refused (deny by default), and Fusebox's own loops act as auth.System.
//
// Something of another team reads as something that does not exist:
// ErrNotYours, answered as the router answers a path naming nothing.
package access

import (
	"context"
	"errors"
	"fmt"

	"github.com/fusebox/fusebox/internal/alerts"
	"github.com/fusebox/fusebox/internal/auth"
	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/downstream"
	"github.com/fusebox/fusebox/internal/jobs"
)

// Kind is the kind of thing a request names.
type Kind int

const (
	// Nothing: a list, a form for something new.
	Nothing Kind = iota
	App
	Job
	Window
	Downstream
	Channel
	Token
)

// Ref names one thing: an app (and so its circuits, queues and keys), a
// job, a maintenance window, a downstream, a channel or an issued token.
type Ref struct {
	Kind Kind
	ID   string
}

// Owner is who owns what a Ref names.
type Owner struct {
	Team  string
	Found bool
	// Shared things (a channel of no team) every team sees and admins
	// change; Fusebox's own (its loops' jobs, tokens of no team, windows
	// over every app) only admins see.
	Shared, Fusebox bool
}

// Lets says whether p may see what o names, and whether it holds role on
// it.
func (o Owner) Lets(p auth.Principal, role auth.Role) (seen, held bool) {
	switch {
	case !o.Found:
		return false, false
	case o.Fusebox:
		return p.Admin(), p.Admin()
	case o.Shared:
		// Shared things are for people who hold a role somewhere: one in
		// no team and with no role sees nothing of anyone's.
		held := p.Top() != auth.RoleNone
		return held, held && (p.Admin() || role == auth.RoleViewer)
	}
	r := p.On(o.Team)
	return r.Allows(auth.RoleViewer), r.Allows(role)
}

var (
	// ErrNoPrincipal: nobody is named as asking; nothing is allowed.
	ErrNoPrincipal = errors.New("access: no principal: refused")
	// ErrNotYours: what was named is another team's, or does not exist.
	ErrNotYours = errors.New("access: no such thing")
	// ErrShared: what was named is shared between teams; changing it is
	// an admin's.
	ErrShared = errors.New("access: shared between teams: changing it is an admin's")
)

// RoleError is a refusal for want of a role.
type RoleError struct{ Need, Held auth.Role }

func (e RoleError) Error() string {
	return fmt.Sprintf("This needs the %s role; you are signed in as %s.", e.Need, e.Held)
}

// Decide says whether p may hold role on what o names (nil: the request
// names nothing, and is judged by the highest role p holds). Lists are
// open to every signed-in person, whose pages then say why they are
// empty.
func Decide(p auth.Principal, o *Owner, role auth.Role) error {
	held := p.Top()
	if o != nil {
		seen, ok := o.Lets(p, role)
		switch {
		case !seen:
			return ErrNotYours
		case !ok && o.Shared:
			return ErrShared
		case ok:
			held = role
		default:
			held = p.On(o.Team)
		}
	} else if role == auth.RoleViewer {
		return nil
	}
	if !held.Allows(role) {
		return RoleError{Need: role, Held: held}
	}
	return nil
}

// Readers read who owns what a Ref names.
type Readers struct {
	Apps    func(ctx context.Context) ([]circuit.App, error)
	App     func(ctx context.Context, id string) (circuit.App, error)
	Job     func(ctx context.Context, id string) (jobs.Job, error)
	Channel func(ctx context.Context, id string) (alerts.Channel, error)
	Windows func(ctx context.Context) ([]jobs.Window, error)
	Tokens  func(ctx context.Context) ([]auth.IssuedToken, error)
	// Downstream reads a downstream by name.
	Downstream  func(ctx context.Context, name string) (downstream.Downstream, error)
	Downstreams func(ctx context.Context) ([]downstream.Downstream, error)
	// For the audit log's entries, which name their subject in words, and
	// the outbox's messages.
	Channels func(ctx context.Context) ([]alerts.Channel, error)
	Jobs     func(ctx context.Context) ([]jobs.Job, error)
}

// Policy answers who may do what, reading owners through Readers.
type Policy struct {
	Read Readers
}

// Check says whether the principal of ctx may hold role on what ref
// names.
func (pol *Policy) Check(ctx context.Context, ref Ref, role auth.Role) error {
	p, ok := auth.PrincipalFrom(ctx)
	if !ok {
		return ErrNoPrincipal
	}
	if ref.Kind == Nothing {
		return Decide(p, nil, role)
	}
	o, err := pol.OwnerOf(ctx, ref)
	if err != nil {
		return err
	}
	return Decide(p, &o, role)
}

// OwnerOf finds what ref names and its team; what does not exist has an
// Owner that is not Found.
func (pol *Policy) OwnerOf(ctx context.Context, ref Ref) (Owner, error) {
	r := pol.Read
	switch ref.Kind {
	case App:
		a, err := r.App(ctx, ref.ID)
		if err != nil {
			return Owner{}, notFoundOr(err)
		}
		return Owner{Team: a.Team, Found: true}, nil
	case Window:
		ws, err := r.Windows(ctx)
		if err != nil {
			return Owner{}, err
		}
		for _, w := range ws {
			if w.ID != ref.ID {
				continue
			}
			if w.AppID == "" {
				return Owner{Found: true, Fusebox: true}, nil
			}
			a, err := r.App(ctx, w.AppID)
			if err != nil {
				return Owner{Found: true, Fusebox: true}, notFoundOr(err) // of an app gone: admins'
			}
			return Owner{Team: a.Team, Found: true}, nil
		}
		return Owner{}, nil
	case Job:
		j, err := r.Job(ctx, ref.ID)
		if err != nil {
			return Owner{}, notFoundOr(err)
		}
		return pol.jobOwner(ctx, j)
	case Downstream:
		d, err := r.Downstream(ctx, ref.ID)
		if errors.Is(err, downstream.ErrNotFound) {
			return Owner{}, nil
		}
		if err != nil {
			return Owner{}, err
		}
		return Owner{Team: d.Team, Found: true}, nil
	case Channel:
		ch, err := r.Channel(ctx, ref.ID)
		if err != nil {
			return Owner{}, notFoundOr(err)
		}
		return Owner{Team: ch.Team, Found: true, Shared: ch.Team == ""}, nil
	case Token:
		ts, err := r.Tokens(ctx)
		if err != nil {
			return Owner{}, err
		}
		for _, t := range ts {
			if t.ID == ref.ID {
				return Owner{Team: t.Team, Found: true, Fusebox: t.Team == ""}, nil
			}
		}
		return Owner{}, nil
	}
	return Owner{}, fmt.Errorf("access: a %d names nothing whose owner is known", ref.Kind)
}

// jobOwner is a job's team: its app's, else its own; Fusebox's loops'
// jobs are admins'.
func (pol *Policy) jobOwner(ctx context.Context, j jobs.Job) (Owner, error) {
	if jobs.InternalID(j.ID) {
		return Owner{Found: true, Fusebox: true}, nil
	}
	if j.AppID == "" {
		return Owner{Team: j.Team, Found: true}, nil
	}
	a, err := pol.Read.App(ctx, j.AppID)
	if err != nil {
		return Owner{Found: true}, notFoundOr(err) // of an app gone: roles held on every app
	}
	return Owner{Team: a.Team, Found: true}, nil
}

// notFoundOr is nil for a lookup of something missing (the owner stays
// not found), and the error otherwise.
func notFoundOr(err error) error {
	if errors.Is(err, circuit.ErrNotFound) || errors.Is(err, jobs.ErrNoJob) || errors.Is(err, alerts.ErrNoChannel) {
		return nil
	}
	return err
}

// AppActed says whether the principal of ctx operates app; with no
// principal, no.
func AppActed(ctx context.Context, app circuit.App) bool {
	p, ok := auth.PrincipalFrom(ctx)
	return ok && For(p).Acts(app.Team)
}

// ChannelSeen says whether the principal of ctx may name ch; with no
// principal, no.
func ChannelSeen(ctx context.Context, ch alerts.Channel) bool {
	p, ok := auth.PrincipalFrom(ctx)
	return ok && For(p).SeesChannel(ch)
}
