package alerts

import (
	"context"

	"github.com/fusebox/fusebox/internal/lease"
)

// What the notification pages read and change, as internal/storage
// spells it.

// ChannelStore keeps notification channels (storage.Channels).
type ChannelStore interface {
	ListChannels(ctx context.Context) ([]Channel, error)
	Get(ctx context.Context, id string) (Channel, error)
	Create(ctx context.Context, ch Channel) error
	Update(ctx context.Context, ch Channel) error
	Delete(ctx context.Context, id string) error
}

// OutboxLog lists the outbox's recent messages and changes one, as a
// person dismissing or retrying it does (storage.Outbox).
type OutboxLog interface {
	Recent(ctx context.Context, limit int) ([]Message, error)
	Update(ctx context.Context, f lease.Fence, m Message) (Message, error)
}

// DeliveryReader reads the destinations the sender last found failing
// (storage.Status).
type DeliveryReader interface {
	Delivery(ctx context.Context) ([]Health, error)
}
