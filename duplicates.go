package webhooks

import (
	"context"
	"hash/maphash"
	"sync/atomic"

	"github.com/smartdrop/webhooks/internal/rdb"
)

// knownEventSlots is how many events a Dispatcher remembers having claimed at most (knownEvents):
// 65,536 slots of 8 bytes, 512 KiB, allocated by the first claim.
const knownEventSlots = 1 << knownEventBits

const knownEventBits = 16

// knownEvents remembers, as 64-bit hashes in a table of knownEventSlots (an event's slot is given by
// the top 16 bits of its hash), the events (ids scoped by their tenant) that this Dispatcher claimed
// lately, a newer one taking the slot of an older one. A call
// for a remembered event, which is most likely a duplicate, first asks Redis only for its records
// (answerDuplicates); a call for any other event claims at once, as it would without the table. The
// table only chooses which script runs first: what a call returns is decided in Redis either way, so
// a hash collision, an event forgotten, or one remembered whose records have expired costs at most
// one round trip. Safe for concurrent use. A nil *knownEvents remembers nothing: a Dispatcher with
// ReplicaAcks has none, since its claim of a duplicate also waits for the replicas.
type knownEvents struct {
	seed  maphash.Seed
	table atomic.Pointer[[knownEventSlots]atomic.Uint64]
}

// newKnownEvents is an empty table, or nil when on is false.
func newKnownEvents(on bool) *knownEvents {
	if !on {
		return nil
	}
	return &knownEvents{seed: maphash.MakeSeed()}
}

// hash is an event's hash as its slot holds it, never 0 (an empty slot), and its slot.
func (k *knownEvents) hash(scoped string) (h uint64, slot int) {
	h = maphash.String(k.seed, scoped)
	return h | 1, int(h >> (64 - knownEventBits))
}

// has reports whether the event may have been claimed by this Dispatcher.
func (k *knownEvents) has(scoped string) bool {
	if k == nil {
		return false
	}
	t := k.table.Load()
	h, slot := k.hash(scoped)
	return t != nil && t[slot].Load() == h
}

// add remembers that the event was claimed.
func (k *knownEvents) add(scoped string) {
	if k == nil {
		return
	}
	t := k.table.Load()
	if t == nil {
		k.table.CompareAndSwap(nil, new([knownEventSlots]atomic.Uint64))
		t = k.table.Load()
	}
	h, slot := k.hash(scoped)
	t[slot].Store(h)
}

// answerDuplicates answers a call for an event of no order key that this Dispatcher claimed lately
// (knownEvents) when every target's pair was claimed before and the event stored is this one: one
// script (rdb.FindDuplicates) that carries the event's fingerprint and the targets' record keys, not
// the records and indexes a claim carries, and a Result per target as the claim gives a duplicate. ok
// is false when the script found anything else, or failed: the caller then claims.
func (d *Dispatcher) answerDuplicates(ctx context.Context, shard int, scoped, eventID, eventType string, body []byte,
	targets []*storedWebhook) (results []Result, ok bool) {
	if !d.known.has(scoped) {
		return nil, false
	}
	keys := make([]string, 1+len(targets))
	keys[0] = d.keys.Event(shard, scoped)
	recs := make([]*rdb.Record, len(targets))
	for i, t := range targets {
		recs[i] = &rdb.Record{Delivery: Delivery{ID: d.keys.DeliveryID(t.ID, scoped), WebhookID: t.ID, EventID: eventID}}
		keys[1+i] = d.keys.Delivery(shard, recs[i].ID)
	}
	reply, err := d.scripts.Run(ctx, rdb.FindDuplicates, keys, rdb.EventMark+eventFingerprint(eventType, body)).Slice()
	if err != nil || len(reply) != 1+len(targets) {
		return nil, false
	}
	results = make([]Result, len(targets))
	for i, t := range targets {
		results[i] = d.notAttempted(eventID, t, recs[i], targetPlan{}, reply[1+i])
	}
	return results, true
}
