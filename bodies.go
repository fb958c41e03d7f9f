package webhooks

import (
	"context"
	"fmt"
	"github.com/smartdrop/webhooks/internal/rdb"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/smartdrop/webhooks/internal/worker"
)

// loadBodies returns the request bodies of leased deliveries: those of events this Dispatcher claimed lately from memory (d.bodies), the others (each event's once) in one round
// trip. A body that has expired is nil.
func (d *Dispatcher) loadBodies(ctx context.Context, jobs []worker.LeasedDelivery) ([][]byte, error) {
	now := time.Now()
	bodies := make([][]byte, len(jobs))
	gets := map[string]*redis.StringCmd{}
	var pipe redis.Pipeliner
	for i, j := range jobs {
		key := j.BodyKey(d.keys)
		if body, ok := d.bodies.Get(key, now); ok {
			bodies[i] = body
			continue
		}
		if gets[key] == nil {
			if pipe == nil {
				pipe = d.rdb.Pipeline()
			}
			gets[key] = pipe.Get(ctx, key)
		}
	}
	if pipe == nil {
		return bodies, nil
	}
	_, _ = pipe.Exec(ctx) // errors are read per command: a missing body is not one
	for i, j := range jobs {
		g := gets[j.BodyKey(d.keys)]
		if g == nil {
			continue
		}
		switch err := g.Err(); {
		case err == nil:
			bodies[i] = rdb.EventBody(g.Val())
		case !isNil(err):
			return nil, fmt.Errorf("webhooks: load event bodies: %w", err)
		}
	}
	return bodies, nil
}
