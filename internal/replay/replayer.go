package replay

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/smartdrop/webhooks/internal/rdb"
	"github.com/smartdrop/webhooks/internal/types"
)

// PageSize is the most events of the replay index one Page call reads.
const PageSize = 500

// Webhooks is the registry as Replayer and Redeliverer read it.
type Webhooks interface {
	// Stored reads a webhook as the registry stores it; an unknown one wraps types.ErrNotFound.
	Stored(ctx context.Context, id string) (*rdb.WebhookRecord, error)
}

// Replayer schedules the events of a webhook's tenant that it has no delivery of (the Dispatcher's
// ReplayMissing and ReplayMissingPage). Every field is set by the Dispatcher that holds it.
type Replayer struct {
	Client    redis.UniversalClient
	Keys      rdb.Keys
	LoadKeys  func(context.Context) error // reads Keys' layout
	Webhooks  Webhooks
	Now       func() time.Time
	Retention time.Duration // the index holds no older events
	On        bool          // Options.ReplayIndex
	// Takes reports whether a webhook takes a stored event's body (its subscriptions and filter; not a
	// test or operational event), and returns its type.
	Takes func(wh *rdb.WebhookRecord, body []byte) (eventType string, ok bool)
	// Claim claims an event of wh's tenant for wh as Enqueue claims it, due at once for the worker, and
	// reports whether it created the delivery (false: the pair was claimed before).
	Claim func(ctx context.Context, wh *rdb.WebhookRecord, eventID, eventType string, body []byte) (bool, error)
}

// Page is one bounded step of ReplayMissing: it reads at most PageSize events of the index from
// cursor at ("" to begin), schedules the missing ones, and returns how many and where to go on. On an
// error it returns the page's work so far, and Next at the page's start.
func (r *Replayer) Page(ctx context.Context, webhookID string, since time.Time, at string) (types.ReplayPage, error) {
	if !r.On {
		return types.ReplayPage{}, fmt.Errorf("webhooks: replay webhook %s: %w", webhookID, types.ErrReplayIndexOff)
	}
	wh, err := r.Webhooks.Stored(ctx, webhookID)
	if err != nil {
		return types.ReplayPage{}, err
	}
	if wh.Disabled {
		return types.ReplayPage{}, fmt.Errorf("webhooks: replay webhook %s: %w", webhookID, types.ErrWebhookDisabled)
	}
	if err := r.LoadKeys(ctx); err != nil {
		return types.ReplayPage{}, fmt.Errorf("webhooks: replay webhook %s: %w", webhookID, err)
	}
	now := r.Now()
	from := max(since.UnixMilli(), now.Add(-r.Retention).UnixMilli())
	c := cursor{from: from, until: now.UnixMilli()}
	if at != "" {
		if c, err = parseCursor(at, r.Keys.Shards); err != nil {
			return types.ReplayPage{}, err
		}
	}
	var page types.ReplayPage
	for read := 0; read < PageSize && c.shard < r.Keys.Shards; {
		count := int64(PageSize - read)
		entries, err := rdb.ReadReplayIndex(ctx, r.Client, r.Keys.Replay(c.shard, wh.Tenant), c.from, c.until, c.skip, count)
		if err == nil {
			var n int
			n, err = r.schedule(ctx, wh, c.shard, entries)
			page.Scheduled += n
		}
		if err != nil {
			page.Next = c.String()
			return page, fmt.Errorf("webhooks: replay webhook %s: %w", webhookID, err)
		}
		read += len(entries)
		c = c.after(entries, count, from)
	}
	if c.shard < r.Keys.Shards {
		page.Next = c.String()
	}
	return page, nil
}

// schedule claims, for webhook wh, those of a page of a shard's index entries whose stored events it
// takes, and returns how many it created.
func (r *Replayer) schedule(ctx context.Context, wh *rdb.WebhookRecord, shard int, entries []rdb.ReplayEntry) (int, error) {
	keys := make([]string, len(entries))
	for i, e := range entries {
		keys[i] = r.Keys.Event(shard, rdb.ScopedEventID(wh.Tenant, e.EventID))
	}
	bodies, err := rdb.ReadShardEvents(ctx, r.Client, keys)
	if err != nil {
		return 0, err
	}
	n := 0
	for i, body := range bodies {
		if body == nil {
			continue // expired
		}
		typ, ok := r.Takes(wh, body)
		if !ok {
			continue
		}
		created, err := r.Claim(ctx, wh, entries[i].EventID, typ, body)
		if err != nil {
			return n, err
		}
		if created {
			n++
		}
	}
	return n, nil
}
