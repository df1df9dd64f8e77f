package setaside

import "context"

// KeptReader reads what the watcher last saw of apps' set-aside queues
// (storage.SetAside).
type KeptReader interface {
	OfApp(ctx context.Context, appID string) (AppSetAside, error)
	All(ctx context.Context) (map[string]AppSetAside, error)
}
