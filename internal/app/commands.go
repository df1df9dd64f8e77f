package app

import (
	"context"
	"io"
	"log/slog"

	"github.com/fusebox/fusebox/internal/clock"
	"github.com/fusebox/fusebox/internal/config"
	"github.com/fusebox/fusebox/internal/storage"
)

// Migrate applies Fusebox's storage migrations under the migration lease,
// for `fusebox migrate` and the demo's seeding.
func Migrate(ctx context.Context, cfg *config.Config, log *slog.Logger) error {
	svc, err := OpenStorage(cfg, nil)
	if err != nil {
		return err
	}
	locker, err := NewLocker(ctx, svc, cfg.Leases, nil, clock.Real{}, log)
	if err != nil {
		return err
	}
	runner, err := Migrator(svc, locker, log)
	if err != nil {
		return err
	}
	applied, err := runner.Apply(ctx)
	if err != nil {
		return err
	}
	log.Info("storage is up to date", "version", runner.Latest(), "applied_now", applied)
	return nil
}

// OpenStore connects to storage alone, for commands that only read or
// write rows.
func OpenStore(cfg *config.Config) (*storage.Store, error) {
	svc, err := OpenStorage(cfg, nil)
	if err != nil {
		return nil, err
	}
	return storage.New(svc), nil
}

// NewLogger logs at cfg's level: text in development, JSON otherwise.
func NewLogger(cfg *config.Config, w io.Writer) *slog.Logger {
	var level slog.Level
	_ = level.UnmarshalText([]byte(cfg.LogLevel))
	opts := &slog.HandlerOptions{Level: level}
	if cfg.Env == config.Development {
		return slog.New(slog.NewTextHandler(w, opts))
	}
	return slog.New(slog.NewJSONHandler(w, opts))
}
