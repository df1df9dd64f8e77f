package web

import (
	"context"
	"time"

	"github.com/fusebox/fusebox/internal/alerts"
	"github.com/fusebox/fusebox/internal/audit"
	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/fleet"
	"github.com/fusebox/fusebox/internal/hostinsight"
	"github.com/fusebox/fusebox/internal/jobs"
	"github.com/fusebox/fusebox/internal/setaside"
)

// The small interfaces more than one handler group holds, each the few
// methods its handlers call; internal/storage, the services and the
// lease.Locker satisfy them. An interface one group holds is in that
// group's file (group_*.go).
type (
	appReader interface {
		List(context.Context) ([]circuit.App, error)
		Get(ctx context.Context, id string) (circuit.App, error)
	}
	recentCircuits interface {
		// Recent may answer from this instance's last list (see listFreshness).
		Recent(ctx context.Context, maxAge time.Duration) ([]circuit.Circuit, error)
	}
	// channelChecker says which of the channel ids name no channel
	// (alerts.KnownChannels).
	channelChecker interface {
		Check(ctx context.Context, ids []string) error
	}
	hostReader interface {
		Snapshot(ctx context.Context, app circuit.App, now time.Time) (hostinsight.Snapshot, bool)
		SnapshotAfter(ctx context.Context, app circuit.App, now, after time.Time) (hostinsight.Snapshot, bool)
		Aging(ctx context.Context, app circuit.App, ci circuit.Circuit, ps []hostinsight.Position, timeout time.Duration) (hostinsight.Retention, []hostinsight.Problem)
	}
	keptSetAside interface {
		OfApp(ctx context.Context, appID string) (setaside.AppSetAside, error)
		All(ctx context.Context) (map[string]setaside.AppSetAside, error)
	}
	appInspector interface {
		Inspect(ctx context.Context, app circuit.App) (fleet.Inspection, error)
	}
	rateReader interface {
		Since(ctx context.Context, from time.Time) ([]circuit.MinuteCount, error)
		Of(ctx context.Context, appID, function string, from time.Time) ([]circuit.MinuteCount, error)
	}
	jobLister interface {
		List(context.Context) ([]jobs.Job, error)
	}
	statusReader interface {
		Evaluator(ctx context.Context) (circuit.Status, error)
	}
	deliveryReader interface {
		Delivery(ctx context.Context) ([]alerts.Health, error)
	}
	auditAppender interface {
		Append(context.Context, audit.Entry) error
	}
)
