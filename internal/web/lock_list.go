package web

import (
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/fusebox/fusebox/internal/hostinsight"
	"github.com/fusebox/fusebox/internal/lease"
	"github.com/fusebox/fusebox/internal/views"
)

// lockList shows every lease: who holds it, its generation, when it was
// last renewed and when it would expire. Those times are as the holder
// wrote them and as this instance's clock reads them, so across machines
// they are a guide for people, not what contenders decide by.
func (s *Server) lockList(c echo.Context) error {
	recs, err := s.Leases.List(c.Request().Context())
	if err != nil {
		return err
	}
	slices.SortFunc(recs, func(a, b lease.Record) int { return strings.Compare(a.Name, b.Name) })
	now := s.Now()
	rows := make([]views.LockRow, len(recs))
	for i, r := range recs {
		row := views.LockRow{Name: r.Name, Holder: r.Holder, Generation: r.Generation, RenewedAt: r.RenewedAt,
			Duration: shortDuration(r.Duration), Mine: r.Holder != "" && r.Holder == s.Leases.Identity()}
		switch expires := r.RenewedAt.Add(r.Duration).Sub(now); {
		case r.Holder == "":
			row.State, row.Tone = "free", "muted"
		case expires > 0:
			row.State, row.Tone, row.ExpiresIn = "held", "ok", shortDuration(expires.Round(time.Second))
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
				m.HostLocks = append(m.HostLocks, views.HostLockRow{App: a.ID, Blob: l.Blob, Kind: l.Kind, State: l.State, Duration: l.Duration,
					Since: views.Ago(now, l.Since), FunctionInstance: l.FunctionInstance})
			}
		}
	}
	return render(c, http.StatusOK, views.LocksPage(m))
}
