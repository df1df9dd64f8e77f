package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/fusebox/fusebox/internal/clock"
	"github.com/fusebox/fusebox/internal/config"
	"github.com/fusebox/fusebox/internal/lease"
	"github.com/fusebox/fusebox/internal/metrics"
	"github.com/fusebox/fusebox/internal/migrate"
	"github.com/fusebox/fusebox/internal/sealed"
	"github.com/fusebox/fusebox/internal/storage"
	"github.com/fusebox/fusebox/internal/tablestore"
	"github.com/fusebox/fusebox/internal/telemetry"
	"github.com/fusebox/fusebox/migrations"
)

// stores is Fusebox's storage: the account, the lease locker, the
// migrations and the repositories over them.
type stores struct {
	svc    *tablestore.Service
	locker *lease.Locker
	runner *migrate.Runner
	store  *storage.Store
}

// OpenStorage connects to Table Storage as configured.
func OpenStorage(cfg *config.Config, m *metrics.Metrics) (*tablestore.Service, error) {
	opts := tablestore.Options{Prefix: cfg.Storage.TablePrefix, Tracing: telemetry.AzureProvider()}
	if m != nil {
		opts.Observe = m.ObserveStorage
	}
	if cfg.Storage.ConnectionString != "" {
		return tablestore.NewFromConnectionString(cfg.Storage.ConnectionString.Reveal(), opts)
	}
	return tablestore.NewWithManagedIdentity(cfg.Storage.AccountURL, opts)
}

// NewLocker prepares the leases table and a Locker for this process.
func NewLocker(ctx context.Context, svc *tablestore.Service, timing config.LeaseTiming, m *metrics.Metrics, clk clock.Clock, log *slog.Logger) (*lease.Locker, error) {
	if err := svc.CreateTable(ctx, storage.TableLeases); err != nil {
		return nil, fmt.Errorf("prepare the leases table: %w", err)
	}
	s := lease.Settings{Logger: log, Clock: clk, Duration: timing.Duration, RenewDeadline: timing.RenewDeadline, RetryPeriod: timing.RetryPeriod}
	if m != nil {
		s.Observer = m.Leases()
	}
	return lease.New(storage.New(svc).Leases, s)
}

// Migrator returns the runner for Fusebox's migrations.
func Migrator(svc *tablestore.Service, locker *lease.Locker, log *slog.Logger) (*migrate.Runner, error) {
	return migrate.New(svc, migrations.Steps(), migrate.Settings{Locker: locker, Logger: log})
}

// openStores reaches Table Storage, applies the migrations when told to,
// and seals secrets. Every problem says what to fix.
func openStores(ctx context.Context, cfg *config.Config, o Options, m *metrics.Metrics) (stores, error) {
	svc, err := OpenStorage(cfg, m)
	if err != nil {
		return stores{}, err
	}
	pingCtx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if err := svc.Ping(pingCtx); err != nil {
		return stores{}, fmt.Errorf("cannot reach Table Storage (check FUSEBOX_STORAGE_CONNECTION_STRING or FUSEBOX_STORAGE_ACCOUNT_URL, and that the account is reachable): %w", err)
	}
	locker, err := NewLocker(ctx, svc, cfg.Leases, m, o.Clock, o.Logger)
	if err != nil {
		return stores{}, err
	}
	runner, err := Migrator(svc, locker, o.Logger)
	if err != nil {
		return stores{}, err
	}
	if cfg.MigrateOnStart {
		applied, err := runner.Apply(ctx)
		if err != nil {
			return stores{}, err
		}
		if len(applied) > 0 {
			o.Logger.Info("migrations applied", "versions", applied)
		}
	}
	store := storage.New(svc)
	if err := useSecrets(ctx, cfg, store, o.Logger); err != nil {
		return stores{}, err
	}
	m.WatchUnreadableRows(store.Faults.Counts)
	return stores{svc: svc, locker: locker, runner: runner, store: store}, nil
}

// useSecrets seals apps' and channels' secrets from now on, and seals
// those written before (plaintext, or under a key no longer first).
func useSecrets(ctx context.Context, cfg *config.Config, store *storage.Store, log *slog.Logger) error {
	keys := make([]sealed.Key, 0, len(cfg.SecretsKeys))
	for _, k := range cfg.SecretsKeys {
		keys = append(keys, sealed.Key{ID: k.ID, Secret: []byte(k.Key.Reveal())})
	}
	box, err := sealed.New(keys...)
	if err != nil {
		return fmt.Errorf("FUSEBOX_SECRETS_KEYS: %w", err)
	}
	store.UseSecrets(box)
	resealCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	apps, err := store.Apps.Reseal(resealCtx)
	if err != nil {
		log.Warn("could not seal the apps' secrets yet; the next start tries again", "sealed", apps)
	}
	channels, err := store.Channels.Reseal(resealCtx)
	if err != nil {
		log.Warn("could not seal the channels' secrets yet; the next start tries again", "sealed", channels)
	}
	jobsSealed, err := store.Jobs.Reseal(resealCtx)
	if err != nil {
		log.Warn("could not seal the jobs' ping tokens yet; the next start tries again", "sealed", jobsSealed)
	}
	if apps+channels+jobsSealed > 0 {
		log.Info("sealed secrets kept in plain text or under an older key", "apps", apps, "channels", channels, "jobs", jobsSealed)
	}
	return nil
}

// ready says whether this instance can serve: storage answers and the
// schema is the one this build needs.
func (s stores) ready(ctx context.Context) error {
	if err := s.svc.Ping(ctx); err != nil {
		return errors.New("table storage is unreachable")
	}
	v, err := s.runner.Current(ctx)
	if err != nil {
		return errors.New("cannot read the schema version")
	}
	if v != s.runner.Latest() {
		return fmt.Errorf("schema is at version %d, this build needs %d: run fusebox migrate", v, s.runner.Latest())
	}
	return nil
}
