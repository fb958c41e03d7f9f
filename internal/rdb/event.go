package rdb

import (
	"context"
	"errors"

	"github.com/redis/go-redis/v9"
)

// StoredEvent is what the claim stores for an event (Keys.Event): EventMark, its fingerprint
// (FingerprintLen hex digits), then its body.
func StoredEvent(fingerprint string, body []byte) string {
	return EventMark + fingerprint + string(body)
}

// EventBody is the body of a stored event, with or without a fingerprint (an event stored by an
// earlier build has none).
func EventBody(stored string) []byte {
	if len(stored) > len(EventMark)+FingerprintLen && stored[:len(EventMark)] == EventMark {
		return []byte(stored[len(EventMark)+FingerprintLen:])
	}
	return []byte(stored)
}

// ReadEventBodies reads the stored events of keys in one round trip and returns their bodies
// (EventBody) by key; an event that has expired is missing.
func ReadEventBodies(ctx context.Context, c redis.UniversalClient, keys []string) (map[string][]byte, error) {
	pipe := c.Pipeline()
	gets := make(map[string]*redis.StringCmd, len(keys))
	for _, k := range keys {
		if gets[k] == nil {
			gets[k] = pipe.Get(ctx, k)
		}
	}
	if len(gets) == 0 {
		return nil, nil
	}
	_, _ = pipe.Exec(ctx) // errors are read per command: a missing event is not one
	bodies := make(map[string][]byte, len(gets))
	for k, g := range gets {
		switch err := g.Err(); {
		case err == nil:
			bodies[k] = EventBody(g.Val())
		case !errors.Is(err, redis.Nil):
			return nil, err
		}
	}
	return bodies, nil
}

// ReadStoredEvent reads what the claim stored for an event (its id scoped by its tenant): StoredEvent's
// form, or an ordered event's marker (OrderMarker and its key); "" when there is none.
func ReadStoredEvent(ctx context.Context, c redis.UniversalClient, k Keys, scoped string) (string, error) {
	v, err := c.Get(ctx, k.Event(k.ShardOf(scoped), scoped)).Result()
	if errors.Is(err, redis.Nil) {
		return "", nil
	}
	return v, err
}
