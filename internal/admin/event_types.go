package admin

// The routes of the catalog of event types (GET/POST /event-types, GET/PATCH/DELETE
// /event-types/{name}, GET /event-types/openapi.json): the operator changes the catalog, the portal
// reads it.

import (
	"context"

	"github.com/smartdrop/webhooks/internal/types"
)

// EventTypesAnswer is what build makes of the catalog (GET /event-types, GET
// /event-types/openapi.json), from the process's copy of it (EventTypes.Catalog), once per version.
func (b *Backend) EventTypesAnswer(ctx context.Context, kind string, build func([]types.EventType) ([]byte, error)) ([]byte, error) {
	cat, err := b.EventTypeRepo.Catalog(ctx)
	if err != nil {
		return nil, err
	}
	return cat.Answer(kind, build)
}

// GetEventType reads an event type of the catalog (GET /event-types/{name}).
func (b *Backend) GetEventType(ctx context.Context, name string) (*types.EventType, error) {
	return b.EventTypeRepo.Get(ctx, name)
}

// CreateEventType adds an event type to the catalog (POST /event-types).
func (b *Backend) CreateEventType(ctx context.Context, t types.EventType) (*types.EventType, error) {
	return b.EventTypeRepo.Create(ctx, t)
}

// PatchEventType changes an event type by apply in one read-modify-write.
func (b *Backend) PatchEventType(ctx context.Context, name string, apply func(*types.EventType) error) (*types.EventType, error) {
	return b.EventTypeRepo.Patch(ctx, name, apply)
}

// DeleteEventType removes an event type from the catalog (DELETE /event-types/{name}).
func (b *Backend) DeleteEventType(ctx context.Context, name string) error {
	return b.EventTypeRepo.Delete(ctx, name)
}
