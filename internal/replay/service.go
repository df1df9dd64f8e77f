package replay

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/fanout"
	"github.com/fusebox/fusebox/internal/hostinsight"
	"github.com/fusebox/fusebox/internal/spoken"
	"github.com/fusebox/fusebox/internal/tablestore"
)

// Service places replay points and resumes circuits from them.
type Service struct {
	Circuits interface {
		Get(ctx context.Context, appID, function string) (circuit.Circuit, error)
	}
	Apps interface {
		Get(ctx context.Context, appID string) (circuit.App, error)
	}
	// Switch turns the trigger back on once every partition was written
	// or refused.
	Switch interface {
		Flip(ctx context.Context, appID, function, actor, reason string, a circuit.Action) (circuit.Circuit, error)
		ResumeByLink(ctx context.Context, l circuit.LinkClaim, actor, reason string) (circuit.Circuit, error)
	}
	Records Records
	// Unsettled lists an app's replays whose outcome is not known yet
	// (Settle); nil: none are settled.
	Unsettled func(ctx context.Context, appID string) ([]Record, error)
	History   History
	// Flips are the circuit's flip log, newest first, to find where a
	// throttle that came before the trip began; nil: only the last change
	// counts.
	Flips interface {
		Flips(ctx context.Context, appID, function string, limit int) ([]circuit.Flip, error)
	}
	// Failures finds the first failure of a function in [from, to].
	Failures interface {
		First(ctx context.Context, appID, function string, from, to time.Time) (time.Time, bool, error)
	}
	Hosts interface {
		SnapshotAfter(ctx context.Context, app circuit.App, now, after time.Time) (hostinsight.Snapshot, bool)
	}
	// Blobs are the app's checkpoint blobs, read and written with the
	// host-insight credential (hostinsight.Source.Client).
	Blobs func(app circuit.App) (Blobs, error)
	Now   func() time.Time
	// Counted, when set, is told what each finished replay replayed and
	// lost (metrics).
	Counted func(replayed, lost int64)
	// Quiet is how long a partition's checkpoint and ownership must have
	// stood still before its checkpoint is moved: the Event Hubs
	// processor renews its ownership every 10 s and lets it expire after
	// 30 s, so a write within that is the host still running. Default 30 s.
	Quiet time.Duration
}

// Records keep each episode's replay.
type Records interface {
	Get(ctx context.Context, appID, function string, episode int64) (Record, error) // tablestore.ErrNotFound when none
	Save(ctx context.Context, r *Record) error                                      // tablestore.ErrConflict when it changed since read
}

// History keeps each function's samples.
type History interface {
	Before(ctx context.Context, appID, function string, t time.Time) (Sample, bool, error)
	After(ctx context.Context, appID, function string, from, to time.Time, limit int) ([]Sample, error)
}

// Blobs reads and writes checkpoint blobs (Checkpoints).
type Blobs interface {
	Read(ctx context.Context, key string, legacy bool) (Current, error)
	// Claimed is when the partition's ownership was last written, and
	// whether a host leases its v4 checkpoint blob.
	Claimed(ctx context.Context, key string, legacy bool) (time.Time, bool, error)
	Write(ctx context.Context, key string, target Mark, etag string) error
}

// ErrNotReady is a resume from before the first failure that cannot run
// yet, or at all; its text says why, for people.
type ErrNotReady struct{ Why string }

func (e ErrNotReady) Error() string { return "replay: " + e.Why }

// Ready says whether ci may be resumed from before its first failure: an
// Event Hubs function whose host storage Fusebox reads, with its trigger
// off and the switch applied (confirmed by the host where it can be).
func Ready(ci circuit.Circuit, app circuit.App) error {
	switch {
	case ci.Consumes().Hub == "":
		return ErrNotReady{"the circuit names no Event Hub, so Fusebox does not know which checkpoints are its"}
	case app.HostStorage == "":
		return ErrNotReady{"the app's host storage is not set, so Fusebox cannot read or move its checkpoints"}
	case !ci.State.TriggerOff():
		return ErrNotReady{"the trigger is on: checkpoints are moved only while it is off"}
	case ci.Pending():
		return ErrNotReady{"the trigger has not been switched off yet"}
	case ci.ConfirmationOf() == circuit.Contradicted || ci.ConfirmationOf() == circuit.Unconfirmed && app.Switch == circuit.SwitchARM:
		return ErrNotReady{"the host has not confirmed the trigger off yet"}
	}
	return nil
}

// bound of the history read forward for a later checkpoint still held.
const maxForward = 2000

// stepParallel bounds the partitions read or written at once.
const stepParallel = 8

// Of is ci's replay as it stands: the stored record of its episode, or a
// point placed now (not stored: the sampler stores it).
func (s *Service) Of(ctx context.Context, ci circuit.Circuit, app circuit.App) (Record, error) {
	rec, err := s.Records.Get(ctx, ci.AppID, ci.Function, ci.Episode)
	if err == nil {
		return rec, nil
	}
	if !errors.Is(err, tablestore.ErrNotFound) {
		return Record{}, err
	}
	return s.place(ctx, ci, app)
}

// Place stores ci's replay point if its episode has none yet.
func (s *Service) Place(ctx context.Context, ci circuit.Circuit, app circuit.App) error {
	if _, err := s.Records.Get(ctx, ci.AppID, ci.Function, ci.Episode); !errors.Is(err, tablestore.ErrNotFound) {
		return err
	}
	rec, err := s.place(ctx, ci, app)
	if err != nil || rec.unsure {
		return err
	}
	if err := s.Records.Save(ctx, &rec); err != nil && !errors.Is(err, tablestore.ErrExists) {
		return err
	}
	return nil
}

func (s *Service) place(ctx context.Context, ci circuit.Circuit, app circuit.App) (Record, error) {
	rec := Record{AppID: ci.AppID, Function: ci.Function}
	rec.Episode = ci.Episode
	from, err := s.firstFrom(ctx, ci)
	if err != nil {
		return Record{}, err
	}
	first := ci.ChangedAt
	if t, ok, err := s.Failures.First(ctx, ci.AppID, ci.Function, from, ci.ChangedAt); err != nil {
		return Record{}, err
	} else if ok {
		first = t
	}
	before, ok, err := s.History.Before(ctx, ci.AppID, ci.Function, first.Add(-Slack))
	if err != nil {
		return Record{}, err
	}
	var next Sample
	if ok {
		later, err := s.History.After(ctx, ci.AppID, ci.Function, before.At.Add(time.Millisecond), ci.ChangedAt, 1)
		if err != nil {
			return Record{}, err
		}
		if len(later) > 0 {
			next = later[0]
		}
	}
	snap, has := s.Hosts.SnapshotAfter(ctx, app, s.Now(), ci.SwitchedAt())
	if !has {
		rec.Point = Point{Episode: ci.Episode, FirstFailure: first, Problem: "the app's host storage is not set"}
		rec.unsure = true
		return rec, nil
	}
	var mine []hostinsight.Checkpoint
	for _, c := range snap.Checkpoints {
		if ci.Consumes().Matches(c.Namespace, c.Hub, c.ConsumerGroup) {
			mine = append(mine, c)
		}
	}
	rec.Point = PointOf(ci.Episode, first, before, next, mine, snap.Heads)
	switch {
	case len(mine) > MaxPartitions:
		rec.Point = Point{Episode: ci.Episode, FirstFailure: first, Problem: fmt.Sprintf("the hub has %d partitions; Fusebox replays at most %d", len(mine), MaxPartitions)}
	case len(mine) == 0:
		rec.Problem = "no checkpoint of the circuit's Event Hub was found in the app's host storage"
		rec.unsure = true // the read may have failed: placed again next pass
	case !ok:
		rec.Problem = "Fusebox had not sampled the checkpoints before the first failure (" + first.UTC().Format(time.TimeOnly) + " UTC): it samples them every 10 s from when the app's host storage is set"
	}
	return rec, nil
}

// firstFrom is where to look for the first failure of the trouble that
// switched ci off: a window before the trouble began (its last change, or,
// for a trip that throttling came first to, the throttle's start: a
// throttled function kept failing, and checkpointing past its failures,
// all the while the throttle held), but never before the change that came
// before it (a resume, the creation): failures before that belong to an
// episode that is over.
func (s *Service) firstFrom(ctx context.Context, ci circuit.Circuit) (time.Time, error) {
	from := ci.ChangedAt.Add(-ci.Window)
	if s.Flips == nil {
		return from, nil
	}
	flips, err := s.Flips.Flips(ctx, ci.AppID, ci.Function, maxFlips)
	if err != nil {
		return time.Time{}, err
	}
	slices.SortFunc(flips, func(a, b circuit.Flip) int { return int(b.Episode - a.Episode) }) // newest first
	trip := slices.IndexFunc(flips, func(f circuit.Flip) bool { return f.Episode == ci.Episode })
	if trip < 0 {
		return from, nil
	}
	began := trip
	if flips[trip].From == circuit.Throttled {
		for i := trip + 1; i < len(flips) && flips[i].To == circuit.Throttled; i++ { // the throttle's steps, back to its start
			began = i
			if flips[i].From != circuit.Throttled {
				break
			}
		}
	}
	from = flips[began].At.Add(-ci.Window)
	if before := began + 1; before < len(flips) && flips[before].At.After(from) {
		from = flips[before].At
	}
	return from, nil
}

// Settle finds the replays of appID's circuits that will not run any
// more: the circuit is on again (resumed where it stopped, or by a trial),
// moved on to a later episode, or was deleted. Their skipped events are
// lost for good: recorded, and counted once.
func (s *Service) Settle(ctx context.Context, appID string, circuits []circuit.Circuit) error {
	if s.Unsettled == nil {
		return nil
	}
	recs, err := s.Unsettled(ctx, appID)
	if err != nil {
		return err
	}
	var errs []error
	for _, rec := range recs {
		i := slices.IndexFunc(circuits, func(c circuit.Circuit) bool { return c.Function == rec.Function })
		if i >= 0 && circuits[i].Episode == rec.Episode && circuits[i].State.TriggerOff() {
			continue // still open: the replay may yet run
		}
		if !rec.Planned.IsZero() && s.Now().Sub(rec.Planned) < settleAfter {
			continue // a resume from before the first failure may be finishing it
		}
		rec.Settled, rec.Forsaken = s.Now(), rec.Skipped()
		if err := s.Records.Save(ctx, &rec); err != nil {
			if !errors.Is(err, tablestore.ErrConflict) { // a resume finishing it meanwhile
				errs = append(errs, err)
			}
			continue
		}
		if s.Counted != nil && rec.Forsaken > 0 {
			s.Counted(0, rec.Forsaken)
		}
	}
	return errors.Join(errs...)
}

// settleAfter is how long after its plan a replay whose circuit moved on
// is left to the resume finishing it.
const settleAfter = 5 * time.Minute

// maxFlips bounds the flips read to find where a throttle began.
const maxFlips = 50

// Resume moves ci's checkpoints back to its replay point and then
// switches its trigger back on: by hand (link nil) or by a resume link.
// A plan left open by an earlier resume is finished, not made again.
func (s *Service) Resume(ctx context.Context, appID, function, actor, reason string, link *circuit.LinkClaim) (circuit.Circuit, Record, error) {
	ci, err := s.Circuits.Get(ctx, appID, function)
	if err != nil {
		return ci, Record{}, err
	}
	app, err := s.Apps.Get(ctx, appID)
	if err != nil {
		return ci, Record{}, err
	}
	if link != nil {
		if err := circuit.CheckLink(ci, app, *link); err != nil {
			return ci, Record{}, err
		}
	}
	if err := Ready(ci, app); err != nil {
		return ci, Record{}, err
	}
	rec, err := s.Records.Get(ctx, appID, function, ci.Episode)
	if errors.Is(err, tablestore.ErrNotFound) {
		rec, err = s.place(ctx, ci, app)
	}
	if err != nil {
		return ci, Record{}, err
	}
	if rec.Problem != "" {
		return ci, rec, ErrNotReady{rec.Problem}
	}
	blobs, err := s.Blobs(app)
	if err != nil {
		return ci, rec, err
	}
	if rec.Planned.IsZero() {
		if err := s.plan(ctx, &rec, app, blobs, actor); err != nil {
			return ci, rec, err
		}
	}
	// Partitions are written side by side, each step its own element. The
	// outcome is recorded once, after them: a run stopped midway is
	// finished from the plan, which finds what it wrote already there.
	werr := fanout.Indexes(len(rec.Steps), stepParallel, func(i int) error {
		if rec.Steps[i].State != Pending {
			return nil
		}
		return s.step(ctx, &rec.Steps[i], blobs)
	})
	if err := s.save(ctx, &rec); err != nil || werr != nil {
		return ci, rec, errors.Join(werr, err) // the plan stays open: running it again finishes it
	}
	why := rec.Summary()
	if reason != "" {
		why = reason + " (" + why + ")"
	}
	var next circuit.Circuit
	if link != nil {
		next, err = s.Switch.ResumeByLink(ctx, *link, actor, why)
	} else {
		next, err = s.Switch.Flip(ctx, appID, function, actor, why, circuit.Resuming)
	}
	if err != nil {
		return ci, rec, err
	}
	rec.Finished = s.Now()
	if err := s.save(ctx, &rec); err != nil {
		return next, rec, err
	}
	if s.Counted != nil {
		s.Counted(rec.Counts())
	}
	return next, rec, nil
}

// plan reads every partition's checkpoint and records what each is moved
// to, before anything is written. Another instance's plan, recorded
// first, is taken instead.
func (s *Service) plan(ctx context.Context, rec *Record, app circuit.App, blobs Blobs, actor string) error {
	now := s.Now()
	snap, _ := s.Hosts.SnapshotAfter(ctx, app, now, now.Add(-s.quiet()/3))
	rec.Steps = nil
	var parts []Partition
	for _, part := range rec.Partitions {
		if part.Known && part.Events == 0 {
			continue // nothing to move back
		}
		parts = append(parts, part)
		rec.Steps = append(rec.Steps, Step{Key: part.Key, Partition: part.Partition})
	}
	err := fanout.Indexes(len(parts), stepParallel, func(i int) error {
		if !parts[i].Known {
			rec.Steps[i].State, rec.Steps[i].Reason = Refused, "no position before the first failure is known"
			return nil
		}
		return s.planStep(ctx, rec, &rec.Steps[i], parts[i], snap.Heads[parts[i].Key], blobs, now)
	})
	if err != nil {
		rec.Steps = nil
		var nr ErrNotReady
		if errors.As(err, &nr) {
			return nr // one partition's wait says it for all
		}
		return err
	}
	rec.Planned, rec.Actor = now, actor
	for range 2 {
		err = s.Records.Save(ctx, rec)
		if !errors.Is(err, tablestore.ErrConflict) && !errors.Is(err, tablestore.ErrExists) {
			return err
		}
		theirs, gerr := s.Records.Get(ctx, rec.AppID, rec.Function, rec.Episode)
		if gerr != nil {
			return gerr
		}
		if !theirs.Planned.IsZero() {
			*rec = theirs // another run planned first: its plan is the one
			return nil
		}
		// The checkpoint history's loop placed the point since this run
		// found none (it runs every 10 s; a resume can come at once after
		// a trip): this plan, made from a point placed the same way, goes
		// over it.
		rec.Version = theirs.Version
	}
	return err
}

// planStep plans one partition. A partition in use now is no plan at
// all: nothing is recorded, and the resume can be tried again once the
// host has stopped (ErrNotReady says when).
func (s *Service) planStep(ctx context.Context, rec *Record, st *Step, part Partition, head hostinsight.Head, blobs Blobs, now time.Time) error {
	refuse := func(lost int64, why string) { st.State, st.Reason, st.Lost = Refused, why, lost }
	cur, err := blobs.Read(ctx, part.Key, part.To.Legacy)
	var bad BadBlob
	if errors.As(err, &bad) {
		refuse(part.Events, "its checkpoint does not read: "+bad.Why)
		return nil
	}
	if err != nil {
		return err
	}
	if why := s.busy(cur, now); why != "" {
		return ErrNotReady{"partition " + part.Partition + ": " + why + "; Fusebox moves a checkpoint only after " + spoken.Duration(s.quiet()) + " without a write, so try again shortly"}
	}
	// The host may have checkpointed its last batches after the point was
	// placed, as it stopped: the replay runs from the point to where the
	// checkpoint stands now. One already before the point is left alone.
	if !cur.HasSequence || cur.Sequence < part.From.Sequence {
		refuse(part.Events, fmt.Sprintf("its checkpoint (sequence %d) is already before the replay point (%d): someone moved it back", cur.Sequence, part.From.Sequence))
		return nil
	}
	target := part.From
	if head.First > target.Sequence+1 && !head.Empty {
		// Never behind the hub's retention: the first later checkpoint the
		// history holds that is still inside it, a real position with its
		// offset. What lies before it is lost.
		later, err := s.History.After(ctx, rec.AppID, rec.Function, rec.SampledAt, now, maxForward)
		found := false
		for _, smp := range later {
			if m, ok := smp.Mark(part.Key); ok && m.HasSequence && m.Sequence+1 >= head.First && m.Sequence <= cur.Sequence {
				target, found = m, true
				break
			}
		}
		if err != nil || !found {
			refuse(part.Events, "its replay point has passed the hub's retention, and no later checkpoint still inside it is known")
			return nil
		}
	}
	target.Legacy = cur.Legacy
	st.Target, st.ETag, st.Claimed = target, cur.ETag, cur.Claimed
	st.Replayed = cur.Sequence - target.Sequence
	st.Lost = target.Sequence - part.From.Sequence
	return nil
}

// step writes one partition's checkpoint, or refuses it.
func (s *Service) step(ctx context.Context, st *Step, blobs Blobs) error {
	refuse := func(why string) { st.State, st.Reason, st.Lost, st.Replayed = Refused, why, st.Lost+st.Replayed, 0 }
	claimed, leased, err := blobs.Claimed(ctx, st.Key, st.Target.Legacy)
	if err != nil {
		return err
	}
	if leased || claimed.After(st.Claimed) {
		refuse("a host claimed it since the plan: it is running")
		return nil
	}
	// The write is conditional on the plan's ETag: a checkpoint that moved
	// since is never overwritten. Only then is it read, to tell a write of
	// an earlier run of this plan from the host's.
	var bad BadBlob
	switch err := blobs.Write(ctx, st.Key, st.Target, st.ETag); {
	case errors.As(err, &bad):
		refuse("its checkpoint does not read: " + bad.Why)
	case errors.Is(err, ErrMoved):
		cur, err := blobs.Read(ctx, st.Key, st.Target.Legacy)
		var bad BadBlob
		if errors.As(err, &bad) {
			refuse("its checkpoint was rewritten since the plan and does not read: " + bad.Why)
			return nil
		}
		if err != nil {
			return err
		}
		if cur.HasSequence && cur.Sequence == st.Target.Sequence && cur.Offset == st.Target.Offset {
			st.State = Written // by a run of this plan that stopped midway
			return nil
		}
		refuse("its checkpoint moved since the plan: the host is running")
	case err != nil:
		return err
	default:
		st.State = Written
	}
	return nil
}

// busy says why a partition is in use, or "".
func (s *Service) busy(cur Current, now time.Time) string {
	switch {
	case cur.LeaseHeld:
		return "a host holds its lease: it is running"
	case !cur.Claimed.IsZero() && now.Sub(cur.Claimed) < s.quiet():
		return "a host claimed it " + spoken.Duration(max(now.Sub(cur.Claimed), 0).Truncate(time.Second)) + " ago: it is running"
	case now.Sub(cur.Modified) < s.quiet():
		return "its checkpoint was written " + spoken.Duration(max(now.Sub(cur.Modified), 0).Truncate(time.Second)) + " ago: the host is running"
	}
	return ""
}

func (s *Service) quiet() time.Duration {
	if s.Quiet <= 0 {
		return 30 * time.Second
	}
	return s.Quiet
}

// save stores rec; on a conflict (another instance runs the same plan)
// it takes the stored record and keeps in it the outcomes this run has
// that it lacks.
func (s *Service) save(ctx context.Context, rec *Record) error {
	for range 3 {
		err := s.Records.Save(ctx, rec)
		if !errors.Is(err, tablestore.ErrConflict) {
			return err
		}
		theirs, gerr := s.Records.Get(ctx, rec.AppID, rec.Function, rec.Episode)
		if gerr != nil {
			return gerr
		}
		for j := range theirs.Steps {
			if j < len(rec.Steps) && theirs.Steps[j].State == Pending && rec.Steps[j].State != Pending {
				theirs.Steps[j] = rec.Steps[j]
			}
		}
		if theirs.Finished.IsZero() {
			theirs.Finished = rec.Finished
		}
		*rec = theirs
	}
	return tablestore.ErrConflict
}
