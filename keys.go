package webhooks

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"

	ks "github.com/smartdrop/webhooks/internal/keyspace"
)

// keyspace builds every key of one KeyPrefix. New makes it with newLazyKeyspace (shards.go): the
// registry's keys need only the prefix; the event shards' keys need its layout, which the first call
// that needs them reads from Redis (load).
type keyspace struct {
	prefix string
	*layout
}

func (k keyspace) deliveryKey(shard int, deliveryID string) string {
	return k.Tag(shard) + ":rec:" + ks.DeliveryHash(deliveryID)
}

func (k keyspace) eventKey(shard int, eventID string) string {
	return k.Tag(shard) + ":evt:" + eventID
}

// readyKey is a shard's schedule of webhooks: webhook id -> when its earliest delivery in the shard
// is due (ms), or later while the webhook is parked.
func (k keyspace) readyKey(shard int) string { return k.Tag(shard) + ":ready" }

// queueKey is a webhook's schedule in a shard: delivery id -> next attempt or lease end (ms).
func (k keyspace) queueKey(shard int, webhookID string) string {
	return k.Tag(shard) + ":q:" + webhookID
}

func (k keyspace) indexKey(shard int, webhookID string) string {
	return k.Tag(shard) + ":list:" + webhookID
}

// inlineKey is a shard's schedule of the deliveries leased for an inline attempt:
// delivery id + webhook id -> lease end (ms). A worker takes an entry whose lease ended into its webhook's queue.
func (k keyspace) inlineKey(shard int) string { return k.Tag(shard) + ":inline" }

func (k keyspace) registryTag() string { return "{" + k.prefix + ":registry}" }

func (k keyspace) webhooksKey() string { return k.registryTag() + ":webhooks" }

func (k keyspace) subscribersKey(pattern string) string {
	return k.registryTag() + ":sub:" + pattern
}

// randomHex returns n random bytes, hex encoded.
func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	return hex.EncodeToString(b)
}

// shardOfDelivery reads the shard out of a delivery id; an id that is not one of this keyspace's wraps
// ErrNotFound.
func (k keyspace) shardOfDelivery(id string) (int, error) {
	shard, ok := k.ShardOfDelivery(id)
	if !ok {
		return 0, fmt.Errorf("%w: delivery %q", ErrNotFound, id)
	}
	return shard, nil
}
