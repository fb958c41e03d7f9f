package rdb

// The catalog of event types as the registry stores it: one hash of name -> the type's JSON, and the
// catalog's version (Keys.EventTypes, Keys.EventTypesVersion). Its per-process cache is
// internal/eventtypes.

import (
	"context"
	"errors"

	"github.com/redis/go-redis/v9"
)

// ReadEventTypes reads every type of the catalog: name -> its stored JSON.
func ReadEventTypes(ctx context.Context, c redis.UniversalClient, k Keys) (map[string]string, error) {
	return c.HGetAll(ctx, k.EventTypes()).Result()
}

// ReadEventType reads one type's stored JSON; found is false when the catalog has no type of that name.
func ReadEventType(ctx context.Context, c redis.UniversalClient, k Keys, name string) (raw string, found bool, err error) {
	raw, err = c.HGet(ctx, k.EventTypes(), name).Result()
	if errors.Is(err, redis.Nil) {
		return "", false, nil
	}
	return raw, err == nil, err
}

// WriteEventType runs save_event_type.lua: it writes a type's JSON (raw, "" to delete it) if the
// stored one is still old ("" for none) and the catalog holds fewer than most types (checked when
// creating one), and gives the catalog the new version. It returns SaveDone, SaveConflict or
// SaveOverQuota.
func WriteEventType(ctx context.Context, c redis.UniversalClient, k Keys, name, old, raw, version string, most, mostBytes int) (int, error) {
	return SaveEventType.Run(ctx, c, []string{k.EventTypes(), k.EventTypesVersion()}, name, old, raw, version, most, mostBytes).Int()
}
