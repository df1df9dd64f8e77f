// Package demo fills storage with a function app, circuits in every state
// and a few jobs, so `make run` shows a living dashboard on a fresh machine.
// Seeding is idempotent: running it again resets the demo rows.
package demo

import (
	"context"
	"crypto/sha256"
	"encoding/base32"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/fusebox/fusebox/internal/audit"
	"github.com/fusebox/fusebox/internal/auth"
	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/downstream"
	"github.com/fusebox/fusebox/internal/jobs"
	"github.com/fusebox/fusebox/internal/storage"
	"github.com/fusebox/fusebox/internal/switches/localsettings"
	"github.com/fusebox/fusebox/internal/teams"
	"github.com/fusebox/fusebox/internal/throttle"
)

// AppID is the demo function app's id.
const AppID = "orders-demo"

// The demo's teams: orders owns orders-demo (local users demo, its
// operator, and viewer); billing gets what Guard makes of func-billing
// (user billing). Their members are the local users' ROLE@TEAM.
const (
	TeamOrders  = "orders"
	TeamBilling = "billing"
)

// Key is the demo app's failure-reporting key. It is public, in the README,
// so it must never be given to an app in Azure: make real keys with
// `fusebox app-key`.
const Key = "fbx_orders-demo_local-demo-key-not-for-azure"

// Seed writes the demo. localSettings is the local.settings.json the demo
// app's local switch edits; open circuits are switched off in it.
func Seed(ctx context.Context, st *storage.Store, localSettings string, now time.Time) error {
	have, err := st.Teams.List(ctx)
	if err != nil {
		return err
	}
	for _, t := range []teams.Team{{Name: TeamOrders}, {Name: TeamBilling}} {
		if _, ok := teams.Find(have, t.Name); ok {
			continue // members added on the page stay
		}
		if err := st.Teams.Put(ctx, t); err != nil {
			return err
		}
	}
	app := circuit.App{
		ID: AppID, DisplayName: "Orders (demo)", Site: "func-orders-demo", Switch: circuit.SwitchLocal, LocalSettings: localSettings,
		APIKeyHash: auth.HashAppKey(Key), Team: TeamOrders,
	}
	if err := st.Apps.Put(ctx, app); err != nil {
		return err
	}
	circuits := []circuit.Circuit{
		{AppID: AppID, Function: "ProcessOrders", Settings: circuit.Settings{Threshold: 100, Window: 30 * time.Second}, State: circuit.Closed, ChangedAt: now.Add(-26 * time.Hour), Reason: "resumed by alice"},
		{AppID: AppID, Function: "SyncInventory", Settings: circuit.Settings{Threshold: 50, Window: time.Minute}, State: circuit.Open, Episode: 3, ChangedAt: now.Add(-12 * time.Minute), Reason: "142 failures in 1m (threshold 50)"},
		{AppID: AppID, Function: "SendReceipts", Settings: circuit.Settings{Threshold: 20, Window: 5 * time.Minute}, State: circuit.HalfOpen, Episode: 2, ChangedAt: now.Add(-3 * time.Minute), Reason: "cooldown over: trial run"},
		{AppID: AppID, Function: "ImportPrices", Settings: circuit.Settings{Threshold: 100, Window: 30 * time.Second}, State: circuit.ForcedOpen, Episode: 1, ChangedAt: now.Add(-2 * time.Hour), Reason: "tripped by hand: supplier feed migration"},
	}
	for _, c := range circuits {
		c.AppliedEpisode, c.AppliedAt = c.Episode, c.ChangedAt // the switch below applies it
		c.Recipients = []string{"oncall@example.com"}
		if err := st.Circuits.Put(ctx, c); err != nil {
			return err
		}
		if err := localsettings.SetDisabled(localSettings, c.Function, c.State.TriggerOff()); err != nil {
			return fmt.Errorf("demo: %w", err)
		}
	}
	if err := seedStore(ctx, st, []string{AppID + "/ProcessOrders"}, ""); err != nil {
		return err
	}
	js := []jobs.Job{
		{ID: "5f0c6a1e-7d1b-4c59-9a55-0d6c1e2b7a01", Slug: "nightly-sales-summary", Name: "Nightly sales summary", AppID: AppID, Function: "NightlySalesSummary",
			Schedule: "0 0 1 * * *", TimeZone: "Asia/Tokyo", Grace: 15 * time.Minute, MaxDuration: 30 * time.Minute,
			Recipients: []string{"oncall@example.com"}, CreatedAt: now.Add(-30 * 24 * time.Hour), Status: jobs.Up, LastRunAt: now.Add(-8 * time.Hour)},
		{ID: "5f0c6a1e-7d1b-4c59-9a55-0d6c1e2b7a02", Slug: "reminder-mails", Name: "Reminder mails", AppID: AppID, Function: "ReminderMails",
			Schedule: "0 0 7 * * *", TimeZone: "Tokyo Standard Time", Grace: 10 * time.Minute,
			Recipients: []string{"oncall@example.com"}, CreatedAt: now.Add(-30 * 24 * time.Hour), Status: jobs.Missing, LastRunAt: now.Add(-49 * time.Hour)},
		{ID: QueueDepthCheckID, Slug: "queue-depth-check", Name: "Queue depth check", AppID: AppID, Function: "QueueDepthCheck",
			Schedule: "0 */5 * * * *", TimeZone: "UTC", Grace: time.Minute, MaxDuration: 20 * time.Second,
			CreatedAt: now.Add(-30 * 24 * time.Hour), Status: jobs.Up, LastRunAt: now.Add(-40 * time.Second)},
	}
	for i := range js {
		js[i].PingToken = PingToken(js[i].ID)
		if err := st.Jobs.Put(ctx, js[i]); err != nil {
			return err
		}
	}
	if err := seedRuns(ctx, st, js, now); err != nil {
		return err
	}
	return st.Audit.Append(ctx, audit.Entry{At: now, Actor: "system", Action: "seeded the demo", Target: AppID})
}

// SeedHistory writes what the demo's state tells happened before: the
// open circuit's failures, error texts and flips. `make run` seeds it
// beside Seed; tests that count stored failures start without it.
func SeedHistory(ctx context.Context, st *storage.Store, now time.Time) error {
	c, err := st.Circuits.Get(ctx, AppID, "SyncInventory")
	if err != nil {
		return err
	}
	if err := seedSyncInventory(ctx, st, c, now); err != nil {
		return err
	}
	return seedFlipLogs(ctx, st)
}

// seedFlipLogs gives the other circuits the flips their state tells, so
// each page's state, last change, episode and flip log agree: ProcessOrders
// opened on 131 failures 22 minutes before alice resumed it 26 h ago;
// SendReceipts opened 15 minutes before its cooldown ended in a trial run;
// ImportPrices was tripped by hand by bob.
func seedFlipLogs(ctx context.Context, st *storage.Store) error {
	history := map[string]func(c circuit.Circuit) []circuit.Flip{
		"ProcessOrders": func(c circuit.Circuit) []circuit.Flip {
			opened := c.ChangedAt.Add(-22 * time.Minute)
			return []circuit.Flip{
				{Episode: 1, From: circuit.Closed, To: circuit.Open, At: opened, Actor: circuit.EvaluatorActor, Count: 131, Since: opened.Add(-c.Window),
					Reason: fmt.Sprintf("131 failures in 30s (threshold %d)", c.Threshold)},
				{Episode: 2, From: circuit.Open, To: circuit.Closed, At: c.ChangedAt, Actor: "alice", Reason: c.Reason},
			}
		},
		"SendReceipts": func(c circuit.Circuit) []circuit.Flip {
			opened := c.ChangedAt.Add(-15 * time.Minute)
			return []circuit.Flip{
				{Episode: 1, From: circuit.Closed, To: circuit.Open, At: opened, Actor: circuit.EvaluatorActor, Count: 23, Since: opened.Add(-c.Window),
					Reason: fmt.Sprintf("23 failures in 5m (threshold %d)", c.Threshold)},
				{Episode: 2, From: circuit.Open, To: circuit.HalfOpen, At: c.ChangedAt, Actor: circuit.EvaluatorActor, Reason: c.Reason},
			}
		},
		"ImportPrices": func(c circuit.Circuit) []circuit.Flip {
			return []circuit.Flip{{Episode: 1, From: circuit.Closed, To: circuit.ForcedOpen, At: c.ChangedAt, Actor: "bob", Reason: c.Reason}}
		},
	}
	for function, flips := range history {
		c, err := st.Circuits.Get(ctx, AppID, function)
		if err != nil {
			return err
		}
		fs := flips(c)
		c.Episode, c.AppliedEpisode, c.AppliedAt = fs[len(fs)-1].Episode, fs[len(fs)-1].Episode, c.ChangedAt
		if err := st.Circuits.Put(ctx, c); err != nil {
			return err
		}
		for _, f := range fs {
			f.Threshold, f.Window = c.Threshold, c.Window
			if err := st.Circuits.PutFlip(ctx, c, f); err != nil {
				return err
			}
		}
	}
	return nil
}

// seedSyncInventory gives the open circuit the history its state tells:
// it opened once two days ago and alice resumed it, then 142 failures in
// the minute before it opened again (episode 3), from two host instances,
// mostly the inventory store timing out and some refused connections, so
// its page's charts, error groups and flip log agree with its reason.
func seedSyncInventory(ctx context.Context, st *storage.Store, c circuit.Circuit, now time.Time) error {
	tripAt := c.ChangedAt
	reports := map[string][]storage.Report{}
	total := 0
	for sec := 0; total < 142; sec++ {
		at := tripAt.Add(-59 * time.Second).Add(time.Duration(sec) * time.Second).Truncate(time.Second)
		for w, writer := range []string{"demo-host-1", "demo-host-2"} {
			n := min(1+(sec+w)%3, 142-total)
			if n == 0 {
				break
			}
			text := fmt.Sprintf("Inventory store did not answer within 30 s (GET /stock/%d)", 4700+sec*7+w)
			if (sec+w)%6 == 0 {
				text = fmt.Sprintf("Connection refused by inventory-db.internal:1433 (attempt %d)", 1+sec%3)
			}
			reports[writer] = append(reports[writer], storage.Report{App: AppID, Function: c.Function, Second: at, Count: n, Sample: text})
			total += n
		}
	}
	for writer, rs := range reports {
		if err := st.Failures.Record(ctx, writer, rs); err != nil {
			return err
		}
	}
	for m := tripAt.Add(-time.Minute).Truncate(time.Minute); !m.After(tripAt); m = m.Add(time.Minute) {
		if _, err := st.Rates.Rollup(ctx, st.Failures, m); err != nil {
			return err
		}
	}
	first := now.Add(-2 * 24 * time.Hour)
	flips := []circuit.Flip{
		{Episode: 1, From: circuit.Closed, To: circuit.Open, At: first, Actor: circuit.EvaluatorActor, Count: 88, Since: first.Add(-time.Minute), Threshold: 50, Window: time.Minute, Reason: "88 failures in 1m (threshold 50)"},
		{Episode: 2, From: circuit.Open, To: circuit.Closed, At: first.Add(40 * time.Minute), Actor: "alice", Threshold: 50, Window: time.Minute, Reason: "resumed by alice: the inventory store failed over"},
		{Episode: 3, From: circuit.Closed, To: circuit.Open, At: tripAt, Actor: circuit.EvaluatorActor, Count: 142, Since: tripAt.Add(-time.Minute), Threshold: 50, Window: time.Minute, Reason: c.Reason},
	}
	for _, f := range flips {
		if err := st.Circuits.PutFlip(ctx, c, f); err != nil {
			return err
		}
	}
	return nil
}

// seedRuns gives the demo jobs a week of history with the gaps operators
// look for: a nightly summary that missed one night and failed another,
// reminders that stopped two days ago, and a five-minutely check with a
// restart-shaped hole and a few slow runs.
func seedRuns(ctx context.Context, st *storage.Store, js []jobs.Job, now time.Time) error {
	for _, j := range js {
		sched, err := j.ParseSchedule()
		if err != nil {
			return fmt.Errorf("demo: %w", err)
		}
		var runs []jobs.Run
		slots := sched.Slots(now.Add(-7*24*time.Hour), now)
		for i, slot := range slots {
			switch {
			case j.Function == "NightlySalesSummary" && i == len(slots)-3:
				continue // the missed night
			case j.Function == "ReminderMails" && i >= len(slots)-2:
				continue // stopped two days ago
			case j.Function == "QueueDepthCheck" && i > len(slots)-300 && i < len(slots)-280:
				continue // a deploy took it down for a while
			}
			took := 20 * time.Second
			if j.Function == "NightlySalesSummary" {
				took = time.Duration(8+i%5) * time.Minute
			}
			if j.Function == "QueueDepthCheck" && i%97 == 0 {
				took = 45 * time.Second // slower than its 20 s
			}
			start := slot.Add(time.Duration(i%7) * time.Second)
			runs = append(runs, jobs.Run{Start: start, End: start.Add(took), Failed: j.Function == "NightlySalesSummary" && i == len(slots)-5})
		}
		if err := st.Runs.Import(ctx, j.ID, runs); err != nil {
			return err
		}
	}
	return nil
}

// PingToken is a demo job's ping token: made from its id, so the README's
// curl line works on every run of the demo. Real jobs' tokens are random
// (jobs.NewPingToken); the demo is not linked into the product.
func PingToken(id string) string {
	sum := sha256.Sum256([]byte("fusebox demo ping token " + id))
	raw, _ := hex.DecodeString(strings.ReplaceAll(id, "-", ""))
	return strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(append(raw, sum[:16]...)))
}

// SeedThrottle gives the live demo host's ProcessOrders a throttle stage:
// more than 40 failures in its 30 s window lower the batch size it runs
// with (50, set in the app's settings as the real host reads it) to a
// quarter; it trips on more than 500. The host reports over OpenTelemetry,
// so a failure is a failed invocation: one batch of one partition. With the
// store down, its four partitions fail 20 invocations a second at any batch
// size: throttled within seconds, tripped within 30 s. With the store
// overloaded, a quarter of the batch passes. Each step up waits 2 minutes.
func SeedThrottle(ctx context.Context, st *storage.Store, localSettings string) error {
	c, err := st.Circuits.Get(ctx, AppID, "ProcessOrders")
	if err != nil {
		return err
	}
	c.Threshold = 500
	c.Throttle = circuit.Throttle{Threshold: 40, Quiet: 2 * time.Minute, Kind: throttle.EventHubs}
	if err := st.Circuits.UpdateSettings(ctx, c); err != nil {
		return err
	}
	// What the app runs with, whatever a throttle of an earlier run left.
	batch := "50"
	return localsettings.Tune(localSettings, nil, map[string]*string{throttle.EventHubMaxBatch: &batch, throttle.EventHubPrefetch: nil})
}

// Store is the demo's downstream: the orders store, which ProcessOrders
// (and TakeOrders, with the demo host's queues) write to. Azure Monitor's
// rule on it (AlertRule) trips its members together.
const Store = "orders-store"

// seedStore names the orders store with members, and its health probe
// when probe is set; a store already named keeps its state and episode.
func seedStore(ctx context.Context, st *storage.Store, members []string, probe string) error {
	d := downstream.Downstream{Name: Store, Team: TeamOrders, Members: members, Quorum: 0,
		Rules: []downstream.Rule{{ID: AlertRule, Action: downstream.ActionTrip}},
		Note:  "The orders database: every function that writes orders calls it."}
	if probe != "" {
		d.Probe = downstream.Probe{URL: probe, Good: 3, Every: 2 * time.Second}
	}
	d = d.WithDefaults()
	cur, err := st.Downstreams.Get(ctx, Store)
	if errors.Is(err, downstream.ErrNotFound) {
		_, err = st.Downstreams.Create(ctx, d)
		return err
	}
	if err != nil {
		return err
	}
	_, err = st.Downstreams.Update(ctx, cur.Settled(d))
	return err
}
