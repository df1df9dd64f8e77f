package downstream

import "context"

// Records keeps the downstreams as the pages change them
// (storage.Downstreams); Keeper acts on their members.
type Records interface {
	List(ctx context.Context) ([]Downstream, error)
	Get(ctx context.Context, name string) (Downstream, error)
	Create(ctx context.Context, d Downstream) (Downstream, error)
	Update(ctx context.Context, d Downstream) (Downstream, error)
	Delete(ctx context.Context, name string) error
}
