package breaker

import (
	"cmp"
	"context"
	"fmt"
	"time"

	"github.com/smartdrop/webhooks/internal/rdb"
	"github.com/smartdrop/webhooks/internal/types"

	"github.com/redis/go-redis/v9"
)

// store keeps the webhooks' circuits in Redis (the circuits hash, one field per webhook that failed
// lately), shared by all replicas.
type store struct {
	rdb    redis.UniversalClient
	key    string              // {P:registry}:circuits
	hourly func(string) string // a webhook's hourly counters, {P:registry}:hourly:<webhook id>, which rdb.Count also writes
	// webhooks is the registry's hash of webhooks: rdb.Count creates no circuit or counter for a
	// webhook it does not hold (deleted, or its tenant expunged, while an attempt was in flight).
	webhooks string
}

// newStore is the circuits of a keyspace.
func newStore(client redis.UniversalClient, keys rdb.Keys) *store {
	return &store{rdb: client, key: keys.Circuits(), hourly: keys.Hourly, webhooks: keys.Webhooks()}
}

// acquireProbe asks for webhookID's probe under token (not empty). ok when the circuit is open, its
// open period has ended and no probe is held (or the held one's holdFor has passed): the caller may send
// one attempt, and report its outcome with this token (the probe's until another caller acquires one).
func (s *store) acquireProbe(ctx context.Context, webhookID string, now time.Time, token string, holdFor time.Duration) (ok bool, h types.Health, err error) {
	reply, err := rdb.AcquireProbe.Run(ctx, s.rdb, []string{s.key}, webhookID, now.UnixMilli(), token, max(holdFor.Milliseconds(), 1)).Slice()
	if err != nil || len(reply) != 2 {
		return false, types.Health{}, fmt.Errorf("webhooks: acquire probe of circuit of %s: %w", webhookID, cmp.Or(err, fmt.Errorf("reply %v", reply)))
	}
	code, _ := reply[0].(int64)
	return code == rdb.ProbeGranted, HealthOf(webhookID, reply[1], now), nil
}

// releaseProbe gives back webhookID's probe under token, if it still holds it (rdb.ReleaseProbe).
func (s *store) releaseProbe(ctx context.Context, webhookID, token string) error {
	if err := rdb.ReleaseProbe.Run(ctx, s.rdb, []string{s.key}, webhookID, token).Err(); err != nil {
		return fmt.Errorf("webhooks: release probe of circuit of %s: %w", webhookID, err)
	}
	return nil
}

// read returns the circuits of webhookIDs at now in one HMGET; one not stored is closed, 0 failures.
func (s *store) read(ctx context.Context, now time.Time, webhookIDs ...string) (map[string]types.Health, error) {
	out, vals, err := make(map[string]types.Health, len(webhookIDs)), []any(nil), error(nil)
	if len(webhookIDs) > 0 { // HMGET needs a field
		vals, err = s.rdb.HMGet(ctx, s.key, webhookIDs...).Result()
	}
	if err != nil {
		return nil, fmt.Errorf("webhooks: read circuits: %w", err)
	}
	for i, id := range webhookIDs {
		out[id] = HealthOf(id, vals[i], now)
	}
	return out, nil
}

// forget deletes webhookID's circuit.
func (s *store) forget(ctx context.Context, webhookID string) error {
	if err := s.rdb.HDel(ctx, s.key, webhookID).Err(); err != nil {
		return fmt.Errorf("webhooks: forget circuit of %s: %w", webhookID, err)
	}
	return nil
}
