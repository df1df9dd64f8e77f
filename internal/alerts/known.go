package alerts

import (
	"context"
	"fmt"

	"github.com/fusebox/fusebox/internal/validation"
)

// KnownChannels checks that the channels a circuit or an app names exist.
type KnownChannels struct {
	Channels interface {
		ListChannels(ctx context.Context) ([]Channel, error)
	}
	// Sees says whether the one asking (named by ctx) may name ch: a
	// team's channel is its own and shared ones. Nil: every channel.
	Sees func(ctx context.Context, ch Channel) bool
}

// Check refuses channel ids that name no channel, with a message for the
// channels field; no ids cost no read.
func (k KnownChannels) Check(ctx context.Context, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	chs, err := k.Channels.ListChannels(ctx)
	if err != nil {
		return err
	}
	known := make(map[string]bool, len(chs))
	for _, ch := range chs {
		known[ch.ID] = k.Sees == nil || k.Sees(ctx, ch)
	}
	for _, id := range ids {
		if !known[id] {
			return validation.Error{{Field: "channels", Message: fmt.Sprintf("there is no channel %q: make it on the Channels page first", id)}}
		}
	}
	return nil
}
