package web

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/fusebox/fusebox/internal/audit"
	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/hostinsight"
	"github.com/fusebox/fusebox/internal/lease"
	"github.com/fusebox/fusebox/internal/spoken"
	"github.com/fusebox/fusebox/internal/views"
)

// lockList shows every lease: who holds it, its generation, when it was
// last renewed and when it would expire. Those times are as the holder
// wrote them and as this instance's clock reads them, so across machines
// they are a guide for people, not what contenders decide by.
func (s *OpsPages) lockList(c echo.Context) error {
	recs, err := s.Leases.List(c.Request().Context())
	if err != nil {
		return err
	}
	slices.SortFunc(recs, func(a, b lease.Record) int { return strings.Compare(a.Name, b.Name) })
	now := s.Now()
	rows := make([]views.LockRow, len(recs))
	for i, r := range recs {
		row := views.LockRow{Name: r.Name, Holder: r.Holder, Generation: r.Generation, RenewedAt: r.RenewedAt,
			Duration: spoken.Duration(r.Duration), Mine: r.Holder != "" && r.Holder == s.Leases.Identity()}
		switch expires := r.RenewedAt.Add(r.Duration).Sub(now); {
		case r.Holder == "":
			row.State, row.Tone = "free", "muted"
		case expires > 0:
			row.State, row.Tone, row.ExpiresIn = "held", "ok", spoken.Duration(expires.Round(time.Second))
		default:
			row.State, row.Tone = "expired", "warn"
		}
		rows[i] = row
	}
	m := views.Locks{Page: s.page(c, "Locks", "locks"), Rows: rows, Identity: s.Leases.Identity()}
	if s.HostInsight != nil {
		apps, err := s.Apps.List(c.Request().Context())
		if err != nil {
			return err
		}
		// Each app's account is read on its own: a slow one costs its own
		// time-out, not the others'.
		snaps := make([]hostinsight.Snapshot, len(apps))
		var wg sync.WaitGroup
		for i, a := range apps {
			wg.Go(func() { snaps[i], _ = s.HostInsight.Snapshot(c.Request().Context(), a, now) })
		}
		wg.Wait()
		for i, a := range apps {
			for _, l := range snaps[i].Locks {
				row := views.HostLockRow{App: a.ID, Blob: l.Blob, Kind: l.Kind, State: l.State, Duration: l.Duration,
					Since: views.Ago(now, l.Since), FunctionInstance: l.FunctionInstance, Breakable: l.Breakable(now, s.Config.HostLockBreakAfter)}
				if !l.HeldSince.IsZero() {
					row.Held = "at least " + spoken.Duration(now.Sub(l.HeldSince).Round(time.Second)) + " (seen by this instance)"
				}
				m.HostLocks = append(m.HostLocks, row)
			}
		}
	}
	if c.Request().Header.Get("HX-Request") == "true" {
		return render(c, http.StatusOK, views.LocksBody(m))
	}
	return render(c, http.StatusOK, views.LocksPage(m))
}

// hostLockFor finds a lock of an app that an operator may break now.
func (s *OpsPages) hostLockFor(c echo.Context, appID, blob string) (circuit.App, hostinsight.Lock, error) {
	if s.HostInsight == nil {
		return circuit.App{}, hostinsight.Lock{}, echo.NewHTTPError(http.StatusNotFound)
	}
	app, err := s.Apps.Get(c.Request().Context(), appID)
	if err != nil {
		return app, hostinsight.Lock{}, echo.NewHTTPError(http.StatusNotFound, "There is no such app.")
	}
	snap, _ := s.HostInsight.Snapshot(c.Request().Context(), app, s.Now())
	for _, l := range snap.Locks {
		if l.Blob == blob {
			if !l.Breakable(s.Now(), s.Config.HostLockBreakAfter) {
				return app, l, echo.NewHTTPError(http.StatusConflict, "This lock may not be broken now: the host lock never, others only once seen held for "+spoken.Duration(s.Config.HostLockBreakAfter)+".")
			}
			return app, l, nil
		}
	}
	return app, hostinsight.Lock{}, echo.NewHTTPError(http.StatusNotFound, "That lock is not held any more.")
}

// hostLockConfirm asks before breaking a function app's lock.
func (s *OpsPages) hostLockConfirm(c echo.Context) error {
	app, l, err := s.hostLockFor(c, c.QueryParam("app"), c.QueryParam("blob"))
	if err != nil {
		return err
	}
	return render(c, http.StatusOK, views.HostLockBreakPage(views.HostLockBreak{Page: s.page(c, "Break a lock", "locks"), App: app.ID, Blob: l.Blob,
		Held: "for at least " + spoken.Duration(s.Now().Sub(l.HeldSince).Round(time.Second))}))
}

// hostLockBreak breaks it, and records who did.
func (s *OpsPages) hostLockBreak(c echo.Context) error {
	app, l, err := s.hostLockFor(c, c.FormValue("app"), c.FormValue("blob"))
	if err != nil {
		return err
	}
	if err := s.HostInsight.Break(c.Request().Context(), app, l.Blob); err != nil {
		return err
	}
	p, _ := principal(c)
	ctx, cancel := detached(c)
	defer cancel()
	if err := s.Audit.Append(ctx, audit.Entry{At: s.Now(), Actor: p.Name, Action: "broke host lock", Target: app.ID,
		Detail: fmt.Sprintf("%s (%s), held for at least %s", l.Blob, l.Kind, spoken.Duration(s.Now().Sub(l.HeldSince).Round(time.Second)))}); err != nil {
		return err
	}
	s.setFlash(c, "lock-broken")
	return c.Redirect(http.StatusSeeOther, "/locks")
}
