package web

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/hostinsight"
	"github.com/fusebox/fusebox/internal/spoken"
	"github.com/fusebox/fusebox/internal/views"
	"github.com/fusebox/fusebox/internal/wording"
)

// hostPanel builds what the circuit and resume pages show of the app's own
// storage; nil when the app has none configured or nobody can read it.
func (s *HostPanels) hostPanel(ctx context.Context, ci circuit.Circuit) *views.HostPanel {
	if s.HostInsight == nil {
		return nil
	}
	app, err := s.Apps.Get(ctx, ci.AppID)
	if err != nil {
		return nil
	}
	return s.hostPanelOf(ctx, ci, app)
}

// hostPanelOf is hostPanel of ci's app, already read.
func (s *HostPanels) hostPanelOf(ctx context.Context, ci circuit.Circuit, app circuit.App) *views.HostPanel {
	if s.HostInsight == nil {
		return nil
	}
	snap, ok := s.snapshotOf(ctx, ci, app)
	if !ok {
		return nil
	}
	now := s.Now()
	m := &views.HostPanel{ReadAt: views.Ago(now, snap.ReadAt)}
	ps, own, r := s.behind(ctx, ci, app, &snap)
	keep := r.Keep
	if own && !offSince(ci).IsZero() {
		m.Retention, m.RetentionUrgent = wording.Retention(r, now)
	}
	if !own && len(ps) > 0 {
		m.Note = "These are every checkpoint in the app's storage. Name the event hub " + ci.Function + " consumes in its settings to see which are its own, where it resumes, and whether they moved while it was off."
	}
	var from, lost, moved []string
	late := false
	for _, p := range ps {
		seq := "none yet"
		if p.HasSequence {
			seq = strconv.FormatInt(p.Sequence, 10)
			from = append(from, fmt.Sprintf("%s on partition %s", seq, p.Partition))
		}
		row := views.CheckpointRow{Hub: p.Hub, Group: p.ConsumerGroup, Partition: p.Partition, Sequence: seq,
			Offset: p.Offset, Moved: views.Ago(now, p.Moved), Owner: p.Owner, MovedWhileOff: p.MovedWhileOff}
		if p.Counted {
			row.Waiting = strconv.FormatInt(p.Waiting, 10)
		}
		if !p.Oldest.IsZero() {
			row.Oldest, m.ShowOldest = views.Ago(now, p.Oldest), true
			if e, ok := p.Expires(keep); ok {
				row.Expires = views.Until(now, e)
			}
		}
		if p.Expired > 0 {
			lost = append(lost, fmt.Sprintf("%d on %s/%s", p.Expired, p.Hub, p.Partition))
		}
		if p.MovedWhileOff {
			moved = append(moved, p.Hub+"/"+p.Partition)
			late = late || p.Late(offSince(ci))
		}
		m.Checkpoints = append(m.Checkpoints, row)
	}
	if own && len(from) > 0 && ci.State.TriggerOff() {
		m.Summary = "Resumes from sequence " + strings.Join(from, ", ") + "."
		if waiting, counted, of := hostinsight.Waiting(ps); counted > 0 {
			m.Summary += fmt.Sprintf(" About %d events waiting%s.", waiting, partly(counted, of))
		}
		if len(moved) == 0 && !offSince(ci).IsZero() {
			m.Summary += " Checkpoints unmoved since the trip: nothing was consumed while the trigger was off."
		}
	}
	if len(lost) > 0 {
		m.Expired = "Events passed the hub's retention before the function read them (" + strings.Join(lost, ", ") + "): they are gone from the hub, and resuming cannot bring them back."
	}
	switch {
	case late:
		m.Warning = fmt.Sprintf("%d checkpoints moved after the trigger was switched off (%s), some more than %s after: another consumer uses this consumer group, or the host has not stopped.", len(moved), strings.Join(moved, ", "), spoken.Duration(hostinsight.StopGrace))
	case len(moved) > 0:
		m.Warning = fmt.Sprintf("%d checkpoints moved within %s after the trigger was switched off (%s): the host finishing the batches it had in hand as it stopped (it checkpoints past them, failed or not), or another consumer of this consumer group.", len(moved), spoken.Duration(hostinsight.StopGrace), strings.Join(moved, ", "))
	}
	if c := snap.Concurrency; c != nil {
		if n, ok := c.Functions[ci.Function]; ok {
			m.Concurrency = fmt.Sprintf("Learned concurrency of %s: %d (%d cores; snapshot %s).", ci.Function, n, c.Cores, views.Ago(now, c.Timestamp))
			m.ConcurrencyDay = s.concurrencyDay(ctx, ci, now)
		}
	}
	if tm, ok := hostinsight.TimerOf(snap, ci.Function); ok {
		m.Timer = &views.Timer{Last: tm.Last, Next: tm.Next, Written: tm.LastUpdated, Now: now}
	}
	for _, p := range snap.Problems {
		m.Problems = append(m.Problems, p.Blob+": "+p.Reason)
	}
	return m
}

// withoutProblems is a panel for a page anyone with the link may open
// (the mailed resume page): it says how many parts could not be read, and
// which and why only to those who sign in.
func withoutProblems(m *views.HostPanel) *views.HostPanel {
	if m == nil || len(m.Problems) == 0 {
		return m
	}
	n := len(m.Problems)
	m.Problems = []string{fmt.Sprintf("%d parts of the host's storage could not be read: sign in and open the circuit to see which and why.", n)}
	return m
}

// circuitWaiting is the count of events waiting behind a circuit's
// checkpoints, alone, for the lists' Waiting cells: they ask for it after
// the page has loaded, so a slow host account never holds up a list.
func (s *HostPanels) circuitWaiting(c echo.Context) error {
	ci, err := s.circuitOf(c)
	if err != nil {
		return err
	}
	m := views.Waiting{Href: circuitHref(ci)}
	if snap, _, ok := s.hostSnapshot(c.Request().Context(), ci); ok {
		ps, own := hostinsight.Positions(snap, ci.Consumes(), offSince(ci))
		if waiting, counted, of := hostinsight.Waiting(ps); own && counted > 0 {
			m.Count = strconv.FormatInt(waiting, 10)
			m.Title = fmt.Sprintf("About %d events waiting%s, read %s", waiting, partly(counted, of), views.Ago(s.Now(), snap.ReadAt))
		}
	}
	return render(c, http.StatusOK, views.WaitingCount(m))
}

// hostSnapshot is what the app's own storage and hub say of ci's app;
// false when Fusebox reads neither.
func (s *HostPanels) hostSnapshot(ctx context.Context, ci circuit.Circuit) (hostinsight.Snapshot, circuit.App, bool) {
	if s.HostInsight == nil {
		return hostinsight.Snapshot{}, circuit.App{}, false
	}
	app, err := s.Apps.Get(ctx, ci.AppID)
	if err != nil {
		return hostinsight.Snapshot{}, circuit.App{}, false
	}
	snap, ok := s.snapshotOf(ctx, ci, app)
	return snap, app, ok
}

// snapshotOf is the host's latest snapshot of ci's app. One kept from
// before the last switch would show checkpoints of a trigger that has
// since stopped or started.
func (s *HostPanels) snapshotOf(ctx context.Context, ci circuit.Circuit, app circuit.App) (hostinsight.Snapshot, bool) {
	return s.HostInsight.SnapshotAfter(ctx, app, s.Now(), ci.SwitchedAt())
}

// behind is where ci's partitions stand in snap, and, while its trigger
// is off, when the oldest event waiting behind each arrived and what the
// hub's retention makes of them (hostinsight.Source.Aging). What could not
// be read is added to snap's problems.
func (s *HostPanels) behind(ctx context.Context, ci circuit.Circuit, app circuit.App, snap *hostinsight.Snapshot) ([]hostinsight.Position, bool, hostinsight.Retention) {
	ps, own := hostinsight.Positions(*snap, ci.Consumes(), offSince(ci))
	r := hostinsight.Retention{Keep: ci.HubRetention}
	if own && !offSince(ci).IsZero() {
		var problems []hostinsight.Problem
		r, problems = s.HostInsight.Aging(ctx, app, ci, ps, 3*time.Second)
		snap.Problems = append(snap.Problems, problems...)
	}
	return ps, own, r
}

// offSince is when the circuit's trigger was switched off; zero while it
// is on or the switch is still being applied.
func offSince(ci circuit.Circuit) time.Time {
	if !ci.State.TriggerOff() || ci.Pending() {
		return time.Time{}
	}
	return ci.SwitchedAt()
}

// partly says, after a count of waiting events, when it covers only some
// of the checkpointed partitions (one never checkpointed has no count).
func partly(counted, of int) string {
	if counted == of {
		return ""
	}
	return fmt.Sprintf(" on the %d of %d partitions Event Hubs answered for", counted, of)
}

// concurrencyDay is the learned concurrency over the last 24 hours, the
// highest sample in each quarter hour (0 where none was taken).
func (s *HostPanels) concurrencyDay(ctx context.Context, ci circuit.Circuit, now time.Time) []int {
	if s.HostSamples == nil {
		return nil
	}
	from := now.Add(-24 * time.Hour)
	samples, err := s.HostSamples.Concurrency(ctx, ci.AppID, ci.Function, from)
	if err != nil || len(samples) == 0 {
		return nil
	}
	out := make([]int, 96)
	for _, x := range samples {
		if i := int(x.At.Sub(from) / (15 * time.Minute)); i >= 0 && i < len(out) {
			out[i] = max(out[i], x.Concurrency)
		}
	}
	return out
}
