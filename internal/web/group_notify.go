package web

import (
	"context"

	"github.com/fusebox/fusebox/internal/alerts"
	"github.com/fusebox/fusebox/internal/lease"
)

// NotifyParts are what NotifyPages's handlers use, given to New.
type NotifyParts struct {
	Channels channelStore
	// TestChannel sends a test message to a channel now.
	TestChannel func(ctx context.Context, ch alerts.Channel) error
	// Delivery reads the destinations the sender finds failing.
	Delivery deliveryReader
	Outbox   outboxStore
	Audit    auditAppender
	// Who names a channel: its users are listed beside it.
	Apps     appReader
	Circuits recentCircuits
	Jobs     jobLister
}

// missing names the required parts p lacks.
func (p NotifyParts) missing() []string {
	return absent("Notify",
		part{"Channels", p.Channels == nil},
		part{"TestChannel", p.TestChannel == nil},
		part{"Delivery", p.Delivery == nil},
		part{"Outbox", p.Outbox == nil},
		part{"Audit", p.Audit == nil},
		part{"Apps", p.Apps == nil},
		part{"Circuits", p.Circuits == nil},
		part{"Jobs", p.Jobs == nil},
	)
}

// NotifyPages edit alert channels and show what was sent.
type NotifyPages struct {
	NotifyParts
	*core
}

// What NotifyPages holds, each the few methods its handlers call.
type (
	outboxStore interface {
		Recent(ctx context.Context, limit int) ([]alerts.Message, error)
		Update(ctx context.Context, f lease.Fence, m alerts.Message) (alerts.Message, error)
	}
	channelStore interface {
		ListChannels(ctx context.Context) ([]alerts.Channel, error)
		Get(ctx context.Context, id string) (alerts.Channel, error)
		Create(ctx context.Context, ch alerts.Channel) error
		Update(ctx context.Context, ch alerts.Channel) error
		Delete(ctx context.Context, id string) error
	}
)
