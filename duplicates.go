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

// knownEvents remembers, as 64-bit hashes in a table of knownEventSlots, the events (ids scoped by
// their tenant) that this Dispatcher claimed lately. The slots go in pairs, an event's pair given by
// the top 15 bits of its hash: a pair holds the two newest events of its own, the newest first, so an
// event is forgotten once two newer ones share its pair (replaying as many events as a third of the
// slots, 95% are still remembered, against 85% with one slot per event). A call
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

// hash is an event's hash as its slot holds it, never 0 (an empty slot), and the first slot of its
// pair.
func (k *knownEvents) hash(scoped string) (h uint64, pair int) {
	h = maphash.String(k.seed, scoped)
	return h | 1, 2 * int(h>>(64-knownEventBits+1))
}

// has reports whether the event may have been claimed by this Dispatcher.
func (k *knownEvents) has(scoped string) bool {
	if k == nil {
		return false
	}
	t := k.table.Load()
	h, pair := k.hash(scoped)
	return t != nil && (t[pair].Load() == h || t[pair+1].Load() == h)
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
	h, pair := k.hash(scoped)
	if newest := t[pair].Load(); newest != h {
		// Two adds to one pair at once may lose one of the two: that event is then claimed, as an
		// event forgotten is.
		t[pair+1].Store(newest)
		t[pair].Store(h)
	}
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
