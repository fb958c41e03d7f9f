package webhooks

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"

	"github.com/smartdrop/webhooks/internal/rdb"
)

// deliveryShard reads the shard out of a delivery id; an id that is not one of k's wraps ErrNotFound.
func deliveryShard(k rdb.Keys, id string) (int, error) {
	shard, ok := k.ShardOfDelivery(id)
	if !ok {
		return 0, fmt.Errorf("%w: delivery %q", ErrNotFound, id)
	}
	return shard, nil
}

// randomHex returns n random bytes, hex encoded.
func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	return hex.EncodeToString(b)
}
