package webhooks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/smartdrop/webhooks/internal/filter"
	"github.com/smartdrop/webhooks/internal/rdb"
)

// ReplayPageSize is the most events of the replay index one ReplayMissingPage call reads.
const ReplayPageSize = 500

// ReplayPage is what one ReplayMissingPage call did.
type ReplayPage struct {
	// Scheduled is how many deliveries the call created, each due at once for the worker.
	Scheduled int
	// Next continues the replay: pass it to the next call (with the same webhook and since); "" when
	// the replay is complete.
	Next string
}

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
	if !d.opts.ReplayIndex {
		return ReplayPage{}, fmt.Errorf("webhooks: replay webhook %s: %w", webhookID, ErrReplayIndexOff)
	}
	s, _, err := d.webhooks.load(ctx, webhookID)
	if err != nil {
		return ReplayPage{}, err
	}
	if s.Disabled {
		return ReplayPage{}, fmt.Errorf("webhooks: replay webhook %s: %w", webhookID, ErrWebhookDisabled)
	}
	if err := loadKeys(ctx, d.keys, d.rdb); err != nil {
		return ReplayPage{}, fmt.Errorf("webhooks: replay webhook %s: %w", webhookID, err)
	}
	now := d.now()
	from := max(since.UnixMilli(), now.Add(-d.opts.Retention).UnixMilli())
	at := replayCursor{from: from, until: now.UnixMilli()}
	if cursor != "" {
		if at, err = parseReplayCursor(cursor, d.keys.Shards); err != nil {
			return ReplayPage{}, err
		}
	}
	var page ReplayPage
	for read := 0; read < ReplayPageSize && at.shard < d.keys.Shards; {
		count := int64(ReplayPageSize - read)
		entries, err := d.rdb.ZRangeArgsWithScores(ctx, redis.ZRangeArgs{Key: d.keys.Replay(at.shard, s.Tenant),
			Start: at.from, Stop: at.until, ByScore: true, Offset: at.skip, Count: count}).Result()
		if err == nil {
			var n int
			n, err = d.replayEvents(ctx, s, at.shard, entries)
			page.Scheduled += n
		}
		if err != nil {
			page.Next = at.String()
			return page, fmt.Errorf("webhooks: replay webhook %s: %w", webhookID, err)
		}
		read += len(entries)
		at = at.after(entries, count, from)
	}
	if at.shard < d.keys.Shards {
		page.Next = at.String()
	}
	return page, nil
}

// replayEvents claims, for webhook s, those of a page of a shard's index entries whose stored events
// it takes, and returns how many it created.
func (d *Dispatcher) replayEvents(ctx context.Context, s *storedWebhook, shard int, entries []redis.Z) (int, error) {
	if len(entries) == 0 {
		return 0, nil
	}
	keys := make([]string, len(entries))
	for i, e := range entries {
		keys[i] = d.keys.Event(shard, rdb.ScopedEventID(s.Tenant, e.Member.(string)))
	}
	stored, err := d.rdb.MGet(ctx, keys...).Result() // one shard's keys: one slot
	if err != nil {
		return 0, err
	}
	n := 0
	for i, v := range stored {
		raw, ok := v.(string)
		if !ok {
			continue // expired
		}
		body := rdb.EventBody(raw)
		typ, ok := takesEvent(s, body)
		if !ok {
			continue
		}
		rs := d.claimAndAttempt(ctx, s.Tenant, entries[i].Member.(string), typ, "", body, []*storedWebhook{s}, false)
		if rs[0].Delivery == nil {
			return n, rs[0].Err
		}
		if !rs[0].Duplicate {
			n++
		}
	}
	return n, nil
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

// replayCursor is where a replay goes on: in a shard's index, the entries scored in [from, until]
// after the first skip of them.
type replayCursor struct {
	shard       int
	from, until int64 // accepted, ms
	skip        int64
}

// after is the cursor past entries read from c, asked for count of them; a shard read to its end
// moves the cursor to the next shard, from since (ms).
func (c replayCursor) after(entries []redis.Z, count, since int64) replayCursor {
	if int64(len(entries)) < count {
		return replayCursor{shard: c.shard + 1, from: since, until: c.until}
	}
	last := int64(entries[len(entries)-1].Score)
	if last == c.from {
		c.skip += int64(len(entries))
		return c
	}
	c.from, c.skip = last, 0
	for _, e := range entries {
		if int64(e.Score) == last {
			c.skip++
		}
	}
	return c
}

// String is the cursor as ReplayPage.Next: "shard:from:until:skip".
func (c replayCursor) String() string {
	return fmt.Sprintf("%d:%d:%d:%d", c.shard, c.from, c.until, c.skip)
}

// parseReplayCursor reads a ReplayPage.Next of a keyspace of shards.
func parseReplayCursor(s string, shards int) (replayCursor, error) {
	parts := strings.Split(s, ":")
	var v [4]int64
	err := errors.New("not four numbers")
	if len(parts) == 4 {
		for i, p := range parts {
			if v[i], err = strconv.ParseInt(p, 10, 64); err != nil || v[i] < 0 {
				err = errors.New("not four numbers")
				break
			}
		}
	}
	if err == nil && (v[0] >= int64(shards) || v[1] > v[2]) {
		err = errors.New("out of range")
	}
	if err != nil {
		return replayCursor{}, fmt.Errorf("%w: replay cursor %q: %v", ErrInvalidCursor, s, err)
	}
	return replayCursor{shard: int(v[0]), from: v[1], until: v[2], skip: v[3]}, nil
}
