package teams

import "context"

// Store keeps the teams defined on the Teams page (storage.Teams); Apps
// moves apps between them (storage.Apps).
type (
	Store interface {
		Put(ctx context.Context, t Team) error
		Delete(ctx context.Context, name string) error
	}
	AppMover interface {
		SetTeam(ctx context.Context, id, team string) error
	}
)
