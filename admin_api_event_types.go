package webhooks

// The admin API's routes of the catalog of event types (GET/POST /event-types, GET/PATCH/DELETE
// /event-types/{name}, GET /event-types/openapi.json): the operator changes the catalog, the portal
// reads it.

import (
	"context"
)

func (b adminBackend) ListEventTypes(ctx context.Context) ([]EventType, error) {
	list, err := b.d.eventTypes.List(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]EventType, len(list))
	for i, t := range list {
		out[i] = *t
	}
	return out, nil
}

func (b adminBackend) GetEventType(ctx context.Context, name string) (*EventType, error) {
	return b.d.eventTypes.Get(ctx, name)
}

func (b adminBackend) CreateEventType(ctx context.Context, t EventType) (*EventType, error) {
	return b.d.eventTypes.Create(ctx, t)
}

// PatchEventType changes an event type by apply in one read-modify-write.
func (b adminBackend) PatchEventType(ctx context.Context, name string, apply func(*EventType) error) (*EventType, error) {
	return b.d.eventTypes.modify(ctx, name, apply)
}

func (b adminBackend) DeleteEventType(ctx context.Context, name string) error {
	return b.d.eventTypes.Delete(ctx, name)
}
