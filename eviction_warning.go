package webhooks

import (
	"context"
	"log/slog"
	"strings"

	"github.com/redis/go-redis/v9"
)

// warnIfEvicting logs a warning, when Run starts, if Redis may evict keys under memory pressure (its
// maxmemory-policy is not noeviction): an evicted claim lets its event be sent again, an evicted record
// or queue entry loses a delivery. With noeviction a full Redis refuses writes instead: Dispatch and
// Enqueue fail with ErrNotAccepted and nothing is half-written. Through Options.Logger or, when none is
// set, slog.Default(). A Redis that does not answer INFO (or a policy it does not name) says nothing.
func (d *Dispatcher) warnIfEvicting(ctx context.Context) {
	policy, err := maxmemoryPolicy(ctx, d.rdb)
	if err != nil || policy == "" || policy == "noeviction" {
		return
	}
	log := d.redisDown.log
	if log == nil {
		log = slog.Default()
	}
	log.Warn("webhooks: Redis may evict keys under memory pressure (maxmemory-policy "+policy+
		"): an evicted claim lets its event be sent again and an evicted record loses its delivery; set maxmemory-policy to noeviction",
		"maxmemory_policy", policy)
}

// maxmemoryPolicy reads Redis's maxmemory-policy from INFO memory ("" when it is not there).
func maxmemoryPolicy(ctx context.Context, c redis.UniversalClient) (string, error) {
	info, err := c.Info(ctx, "memory").Result()
	if err != nil {
		return "", err
	}
	for line := range strings.Lines(info) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "maxmemory_policy:"); ok {
			return v, nil
		}
	}
	return "", nil
}
