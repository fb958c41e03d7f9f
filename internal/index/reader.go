package index

import (
	"context"

	"github.com/redis/go-redis/v9"

	"github.com/smartdrop/webhooks/internal/rdb"
)

// Reader reads a keyspace's indexes of deliveries.
type Reader struct {
	Client redis.UniversalClient
	Keys   rdb.Keys
	// Load loads Keys' layout; a read calls it once it has checked its arguments.
	Load func(context.Context) error
}
