package webhooks

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash/fnv"
	"strings"
)

// keyspace builds every key of one KeyPrefix. New makes it with newLazyKeyspace (shards.go): the
// registry's keys need only the prefix; the event shards' keys need its layout, which the first call
// that needs them reads from Redis (load).
type keyspace struct {
	prefix string
	*layout
}

// newKeyspace is the keyspace of a new prefix with the default shard count (tests, and what needs
// only the registry's keys).
func newKeyspace(prefix string) keyspace { return newKeyspaceOf(prefix, DefaultShards, false) }

// tag is a shard's hash tag; shard comes from shardOf or shardOfDelivery, so it is in range.
func (k keyspace) tag(shard int) string { return k.tags[shard] }

func (k keyspace) deliveryKey(shard int, deliveryID string) string {
	return k.tag(shard) + ":rec:" + deliveryHash(deliveryID)
}

// indexedHash is the part of a delivery id after its prefix and shard, as the 12 bytes it spells: what
// the index holds (a shard's index knows its shard).
func indexedHash(deliveryID string) string {
	b, _ := hex.DecodeString(deliveryHash(deliveryID))
	return string(b)
}

// indexedID is the delivery id of an index entry of a shard.
func indexedID(shard int, hash string) string {
	b := make([]byte, 0, deliveryIDLen)
	b = append(b, deliveryIDPrefix...)
	b = hex.AppendEncode(b, []byte{byte(shard)})
	return string(hex.AppendEncode(b, []byte(hash)))
}

// deliveryHash is the part of a delivery id after its prefix and shard.
func deliveryHash(deliveryID string) string {
	if len(deliveryID) == deliveryIDLen {
		return deliveryID[len(deliveryIDPrefix)+2:]
	}
	return deliveryID // not one of ours (a corrupt schedule entry): keep it whole
}

func (k keyspace) eventKey(shard int, eventID string) string {
	return k.tag(shard) + ":evt:" + eventID
}

// readyKey is a shard's schedule of webhooks: webhook id -> when its earliest delivery in the shard
// is due (ms), or later while the webhook is parked.
func (k keyspace) readyKey(shard int) string { return k.tag(shard) + ":ready" }

// queueKey is a webhook's schedule in a shard: delivery id -> next attempt or lease end (ms).
func (k keyspace) queueKey(shard int, webhookID string) string {
	return k.tag(shard) + ":q:" + webhookID
}

func (k keyspace) indexKey(shard int, webhookID string) string {
	return k.tag(shard) + ":list:" + webhookID
}

// inlineKey is a shard's schedule of the deliveries leased for an inline attempt: delivery id +
// webhook id -> lease end (ms). A worker takes an entry whose lease ended into its webhook's queue.
func (k keyspace) inlineKey(shard int) string { return k.tag(shard) + ":inline" }

// inlineEntry is a delivery's member of its shard's inline zset: its id (of fixed length) then its
// webhook's id.
func inlineEntry(deliveryID, webhookID string) string { return deliveryID + webhookID }

func (k keyspace) registryTag() string { return "{" + k.prefix + ":registry}" }

func (k keyspace) webhooksKey() string { return k.registryTag() + ":webhooks" }

func (k keyspace) subscribersKey(pattern string) string {
	return k.registryTag() + ":sub:" + pattern
}

// shardOf is the shard of an event id.
func (k keyspace) shardOf(eventID string) int {
	h := fnv.New32a()
	h.Write([]byte(eventID))
	return int(h.Sum32() % uint32(k.shards))
}

// deliveryIDFor is the id of a (webhook, event) pair's delivery: its shard, then 96 bits of a hash of
// the pair. Because it follows from the pair, the claim script can be handed the record key of a pair
// whether or not the pair was claimed before.
func (k keyspace) deliveryIDFor(webhookID, eventID string) string {
	pair := make([]byte, 0, len(webhookID)+1+len(eventID))
	pair = append(append(append(pair, webhookID...), 0), eventID...)
	sum := sha256.Sum256(pair)
	return indexedID(k.shardOf(eventID), string(sum[:12]))
}

// randomHex returns n random bytes, hex encoded.
func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	return hex.EncodeToString(b)
}

// shardOfDelivery reads the shard out of a delivery id.
func (k keyspace) shardOfDelivery(id string) (int, error) {
	rest, ok := strings.CutPrefix(id, deliveryIDPrefix)
	if !ok || len(id) != deliveryIDLen {
		return 0, fmt.Errorf("%w: delivery %q", ErrNotFound, id)
	}
	b, err := hex.DecodeString(rest[:2])
	if err != nil || int(b[0]) >= k.shards {
		return 0, fmt.Errorf("%w: delivery %q", ErrNotFound, id)
	}
	return int(b[0]), nil
}
