package worker

import "github.com/smartdrop/webhooks/internal/rdb"

// Take is how many due deliveries of one webhook in one shard a worker leases, and how.
type Take struct {
	Due
	N     int
	Probe string // the probe token, when this lease is its circuit's probe
}

// LeasedDelivery is a due delivery this worker holds the lease of.
type LeasedDelivery struct {
	Shard   int
	Rec     *rdb.Record
	Probe   string             // the probe token, when this attempt is its circuit's probe
	Webhook *rdb.WebhookRecord // nil when deleted
	Retime  bool               // its lease read its queue to the last due entry (Outcome.Retime)
}

// ScopedEventID is the leased delivery's event id as scoped by its webhook's tenant (a deleted
// webhook's deliveries need no body).
func (j LeasedDelivery) ScopedEventID() string {
	if j.Webhook == nil {
		return j.Rec.EventID
	}
	return rdb.ScopedEventID(j.Webhook.Tenant, j.Rec.EventID)
}

// BodyKey is the key of the request body of a leased delivery's event (an ordered event's in its
// key's shard).
func (j LeasedDelivery) BodyKey(k rdb.Keys) string {
	if j.Rec.OrderKey != "" {
		return k.OrderedEvent(j.Shard, j.ScopedEventID())
	}
	return k.Event(j.Shard, j.ScopedEventID())
}
