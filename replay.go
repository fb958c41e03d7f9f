package webhooks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/smartdrop/webhooks/internal/filter"
	"github.com/smartdrop/webhooks/internal/rdb"
	"github.com/smartdrop/webhooks/internal/replay"
	"github.com/smartdrop/webhooks/internal/types"
)

// ReplayPageSize is the most events of the replay index one ReplayMissingPage call reads.
const ReplayPageSize = replay.PageSize

// ReplayPage is what one ReplayMissingPage call did (internal/types).
type ReplayPage = types.ReplayPage

// ReplayMissing sends the webhook every event of its tenant that it subscribes to (its patterns, and
// its filter) accepted from since until the call that has no delivery for it yet: each such pair is
// claimed as Enqueue claims it (its record created with SET NX), due at once for the worker (Run). It
// returns how many it scheduled. Events of other tenants, of types the webhook does not subscribe
// to, that its filter rejects, whose body has expired, or that were sent to it before (whatever the
// outcome), test and operational events are not sent, so calling it again, or concurrently, sends nothing more. since is clamped
// to Retention ago: older events are forgotten. Events accepted once the call has begun are not in
// its window: their own Dispatch or Enqueue delivers them.
//
// It reads the tenant's replay index in pages of ReplayPageSize events (ReplayMissingPage) until the
// window is done or ctx ends, so its cost grows with the tenant's events in the window; for work
// bounded per call, call ReplayMissingPage and pass on its Next. It needs Options.ReplayIndex (else
// an error wrapping ErrReplayIndexOff), and replays only events accepted while it was on. An unknown
// webhook gives an error wrapping ErrNotFound, a disabled one ErrWebhookDisabled.
func (d *Dispatcher) ReplayMissing(ctx context.Context, webhookID string, since time.Time) (int, error) {
	total, cursor := 0, ""
	for {
		p, err := d.ReplayMissingPage(ctx, webhookID, since, cursor)
		total += p.Scheduled
		if err != nil || p.Next == "" {
			return total, err
		}
		cursor = p.Next
	}
}

// ReplayMissingPage is one bounded step of ReplayMissing: it reads at most ReplayPageSize events of
// the index from cursor ("" to begin; then the Next of the previous page, with the same webhook and
// since), schedules the missing ones as ReplayMissing does, and returns how many and where to go on.
// Its window ends when the first page was read. A cursor it did not issue gives an error wrapping
// ErrInvalidCursor. On an error it returns the pages' work so far, and Next at the page's start: the
// same call may be made again.
func (d *Dispatcher) ReplayMissingPage(ctx context.Context, webhookID string, since time.Time, cursor string) (ReplayPage, error) {
	return d.replayer.Page(ctx, webhookID, since, cursor)
}

// takesEvent reports whether the webhook takes a stored event body (not a test or operational event,
// a type it subscribes to, and its filter passes) and returns its type.
func takesEvent(s *storedWebhook, body []byte) (string, bool) {
	var w struct {
		Type string          `json:"type"`
		Data json.RawMessage `json:"data"`
	}
	if json.Unmarshal(body, &w) != nil || w.Type == TestEventType || IsOperationalEventType(w.Type) {
		return "", false
	}
	if !slices.ContainsFunc(s.Events, func(p string) bool { return matchPattern(p, w.Type) }) {
		return "", false
	}
	var doc *filter.Document
	if len(s.Filter) > 0 {
		doc = filter.NewDocument(w.Type, w.Data)
	}
	return w.Type, filterMatches(s, doc)
}

// newReplayer is d's ReplayMissing (internal/replay): it claims a missed event as Enqueue does.
func newReplayer(d *Dispatcher) *replay.Replayer {
	return &replay.Replayer{Client: d.rdb, Keys: d.keys, LoadKeys: func(ctx context.Context) error { return loadKeys(ctx, d.keys, d.rdb) },
		Webhooks: webhookStore{d.webhooks}, Now: func() time.Time { return d.now() }, Retention: d.opts.Retention,
		On: d.opts.ReplayIndex, Takes: takesEvent,
		Claim: func(ctx context.Context, wh *storedWebhook, eventID, eventType string, body []byte) (bool, error) {
			rs := d.claimAndAttempt(ctx, wh.Tenant, eventID, eventType, "", body, []*storedWebhook{wh}, false)
			if rs[0].Delivery == nil {
				return false, rs[0].Err
			}
			return !rs[0].Duplicate, nil
		}}
}

// storeForReplay stores an event no webhook takes now, for a webhook a later ReplayMissing may send it
// to: the claim script with no target stores its body and indexes it (Options.ReplayIndex). Its
// error follows Dispatch's: ErrInvalidEvent with ErrEventConflict, else ErrNotAccepted.
func (d *Dispatcher) storeForReplay(ctx context.Context, evt Event, body []byte) error {
	scoped := rdb.ScopedEventID(evt.Tenant, evt.ID)
	_, err := d.claim(ctx, d.keys.ShardOf(scoped), scoped, eventFingerprint(evt.Type, body), body, nil, nil)
	if err != nil && !errors.Is(err, ErrInvalidEvent) {
		err = fmt.Errorf("%w: event %s: %w", ErrNotAccepted, evt.ID, err)
	}
	return err
}
