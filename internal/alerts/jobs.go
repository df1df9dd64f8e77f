package alerts

import (
	"context"
	"time"

	"github.com/fusebox/fusebox/internal/jobs"
)

// Kinds of mail about jobs.
const (
	KindJobMissing   = "job-missing"
	KindJobFailing   = "job-failing"
	KindJobRecovered = "job-recovered"
)

// JobNotifier queues one message per destination when a job goes missing
// or failing, and one when it recovers. It stays silent while the job's
// function is switched off by an open circuit: the job is not running
// because Fusebox stopped it on purpose.
func JobNotifier(o Outbox, c Circuits) jobs.Notifier {
	return func(ctx context.Context, j jobs.Job, from, to jobs.Status, at time.Time) error {
		kind := ""
		switch {
		case to == jobs.Missing:
			kind = KindJobMissing
		case to == jobs.Failing:
			kind = KindJobFailing
		case to == jobs.Up && (from == jobs.Missing || from == jobs.Failing):
			kind = KindJobRecovered
		}
		if kind == "" {
			return nil
		}
		var appChannels []string
		if j.AppID != "" && len(j.Channels) == 0 {
			apps, err := c.ListApps(ctx)
			if err != nil {
				return err
			}
			for _, a := range apps {
				if a.ID == j.AppID {
					appChannels = a.Channels
				}
			}
		}
		dests := Destinations(j.Recipients, j.Channels, appChannels)
		if len(dests) == 0 {
			return nil
		}
		if j.AppID != "" && j.Function != "" {
			cs, err := c.ListCircuits(ctx)
			if err != nil {
				return err
			}
			for _, ci := range cs {
				if ci.AppID == j.AppID && ci.Function == j.Function && ci.State.TriggerOff() {
					return nil
				}
			}
		}
		for _, m := range messages(JobSubject(j.ID), at.Unix(), []string{kind}, dests, at) {
			if err := o.Ensure(ctx, m); err != nil {
				return err
			}
		}
		return nil
	}
}
