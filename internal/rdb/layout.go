package rdb

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash/fnv"
	"strings"

	"github.com/smartdrop/webhooks/internal/types"
)

// Delivery ids: "dlv_" + the shard as two hex digits + 24 hex digits of SHA-256(webhook id, 0, event
// id), so the pair names its record and its id, with keys of bounded length whatever the ids.
const (
	DeliveryIDPrefix = "dlv_"
	DeliveryIDLen    = len(DeliveryIDPrefix) + 2 + 24
)

// Layout is a keyspace's shard count and the shards' hash tags.
type Layout struct {
	Shards int      // the number of event shards, fixed per prefix once used
	Tags   []string // the shards' hash tags
}

// NewLayout is the layout of prefix with shards shards, tags chosen by slot.
func NewLayout(prefix string, shards int) Layout {
	return Layout{Shards: shards, Tags: SlotTags(prefix, shards)}
}

// Tag is a shard's hash tag; shard comes from ShardOf or ShardOfDelivery, so it is in range.
func (l Layout) Tag(shard int) string { return l.Tags[shard] }

// ShardOf is the shard of an event id.
func (l Layout) ShardOf(eventID string) int {
	h := fnv.New32a()
	h.Write([]byte(eventID))
	return int(h.Sum32() % uint32(l.Shards))
}

// DeliveryID is the id of a (webhook, event) pair's delivery: its shard, then 96 bits of a hash of
// the pair. Because it follows from the pair, the claim script can be handed the record key of a pair
// whether or not the pair was claimed before.
func (l Layout) DeliveryID(webhookID, eventID string) string {
	pair := make([]byte, 0, len(webhookID)+1+len(eventID))
	pair = append(append(append(pair, webhookID...), 0), eventID...)
	sum := sha256.Sum256(pair)
	return IndexedID(l.ShardOf(eventID), string(sum[:12]))
}

// ShardOfDelivery reads the shard out of a delivery id; ok is false for an id that is not one of
// this layout's.
func (l Layout) ShardOfDelivery(id string) (shard int, ok bool) {
	rest, ok := strings.CutPrefix(id, DeliveryIDPrefix)
	if !ok || len(id) != DeliveryIDLen {
		return 0, false
	}
	b, err := hex.DecodeString(rest[:2])
	if err != nil || int(b[0]) >= l.Shards {
		return 0, false
	}
	return int(b[0]), true
}

// DeliveryShard is ShardOfDelivery with an error wrapping types.ErrNotFound for an id that is not
// one of this layout's.
func (l Layout) DeliveryShard(id string) (int, error) {
	shard, ok := l.ShardOfDelivery(id)
	if !ok {
		return 0, fmt.Errorf("%w: delivery %q", types.ErrNotFound, id)
	}
	return shard, nil
}

// IndexedHash is the part of a delivery id after its prefix and shard, as the 12 bytes it spells: what
// a shard's index holds (the index knows its shard).
func IndexedHash(deliveryID string) string {
	b, _ := hex.DecodeString(DeliveryHash(deliveryID))
	return string(b)
}

// IndexedID is the delivery id of an index entry of a shard.
func IndexedID(shard int, hash string) string {
	b := make([]byte, 0, DeliveryIDLen)
	b = append(b, DeliveryIDPrefix...)
	b = hex.AppendEncode(b, []byte{byte(shard)})
	return string(hex.AppendEncode(b, []byte(hash)))
}

// DeliveryHash is the part of a delivery id after its prefix and shard.
func DeliveryHash(deliveryID string) string {
	if len(deliveryID) == DeliveryIDLen {
		return deliveryID[len(DeliveryIDPrefix)+2:]
	}
	return deliveryID // not one of ours (a corrupt schedule entry): keep it whole
}

// InlineEntry is a delivery's entry in its shard's inline zset: its delivery id, then its webhook's id
// (the scripts join the two the same way).
func InlineEntry(deliveryID, webhookID string) string { return deliveryID + webhookID }

// SplitInlineEntry reads an inline entry (InlineEntry); ok is false for an entry too short to be one.
func SplitInlineEntry(entry string) (deliveryID, webhookID string, ok bool) {
	if len(entry) <= DeliveryIDLen {
		return "", "", false
	}
	return entry[:DeliveryIDLen], entry[DeliveryIDLen:], true
}
