package index

// The search of deliveries across webhooks (the admin API's GET /deliveries without an id): the
// webhooks' indexes walked newest first, merged by time, under a budget of Redis commands per call,
// counted as the server counts them (INFO commandstats): each command sent, and each command a script
// calls.

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/smartdrop/webhooks/internal/rdb"
	"github.com/smartdrop/webhooks/internal/types"
)

// Bounds of one search of deliveries across webhooks (Reader.Search).
const (
	// SearchCommandBudget is the most Redis commands one search costs the server, as INFO
	// commandstats counts them: each command sent and each command a script calls (the index reads of
	// rdb.Search), the scope's webhooks read included. A search that has not found its Limit of
	// deliveries by then stops with a cursor where it stopped, and says it stopped for the budget. Its
	// first round reads each of the scope's indexes in each shard at least once whatever the budget,
	// so that repeating it with its cursor makes progress: with more (webhook, shard) indexes than
	// about the budget, that round costs more (a tenant's search reads one index per shard).
	SearchCommandBudget = 1800
	// SearchExamineBudget is the most index entries one search examines (the delivery records it
	// reads), whatever their filters; the entries of one index millisecond are examined together, so a
	// search may examine a few more.
	SearchExamineBudget = 2048
	// searchSetupCommands are the commands a search costs the server besides its rounds, at most: the
	// shard count, the scope's webhooks (their ids, then their records) and, for the answer, their
	// circuits (read by the caller for the answer).
	searchSetupCommands = 5
)

// Why a search stopped (SearchPage.Stopped).
const (
	// SearchStoppedEnd: no delivery in the scope is left to examine; there is no cursor.
	SearchStoppedEnd = "end"
	// SearchStoppedLimit: the page holds Limit deliveries; the cursor continues after the last.
	SearchStoppedLimit = "limit"
	// SearchStoppedBudget: the search spent its budget (SearchCommandBudget, SearchExamineBudget)
	// before finding Limit deliveries; the cursor continues where it stopped.
	SearchStoppedBudget = "budget"
)

// SearchQuery is one search across the webhooks WebhookIDs. With Tenant set it reads that tenant's
// indexes (Keys.TenantIndex: one per shard, however many webhooks the tenant has) and keeps the
// deliveries of WebhookIDs, which must all be the tenant's; without, it merges each webhook's index
// (Keys.Index: one per webhook and shard).
type SearchQuery struct {
	WebhookIDs []string
	Tenant     string
	Status     types.Status
	EventType  string
	From, To   time.Time // bounds of the creation time; zero: none
	Limit      int
	Cursor     string // "" starts at the newest (or at To)

	scope map[string]bool // WebhookIDs as a set (Search)
}

// cursorVersion is the version of q's cursors: a tenant's index places a delivery elsewhere than its
// webhook's.
func (q SearchQuery) cursorVersion() byte {
	if q.Tenant != "" {
		return tenantCursorVersion
	}
	return cursorVersion
}

// indexes are the index keys q reads in a shard.
func (q SearchQuery) indexes(k rdb.Keys, shard int) []string {
	if q.Tenant != "" {
		return []string{k.TenantIndex(shard, q.Tenant)}
	}
	keys := make([]string, len(q.WebhookIDs))
	for i, id := range q.WebhookIDs {
		keys[i] = k.Index(shard, id)
	}
	return keys
}

// filtered reports whether q keeps only some deliveries.
func (q SearchQuery) filtered() bool {
	return q.Status != "" || q.EventType != "" || !q.From.IsZero() || !q.To.IsZero()
}

// Keeps reports whether q keeps the delivery dl: its status, event type and creation time.
func (q SearchQuery) Keeps(dl *types.Delivery) bool {
	return (q.Status == "" || dl.Status == q.Status) && (q.EventType == "" || dl.EventType == q.EventType) &&
		within(dl.CreatedAt, q.From, q.To)
}

// within reports whether t is in [from, to], a zero bound being none.
func within(t, from, to time.Time) bool {
	return (from.IsZero() || !t.Before(from)) && (to.IsZero() || !t.After(to))
}

// SearchPage is the answer of a search: the deliveries found, newest first, why it stopped, the
// cursor that continues it ("" at the end) and what it cost.
type SearchPage struct {
	Deliveries []*types.Delivery
	Stopped    string // SearchStopped*
	Next       string
	commands   int // Redis commands the server ran: each sent, and each a script called
	examined   int // index entries examined
}

// searchShard is a shard's state during a search.
type searchShard struct {
	from string // where its next read starts (rdb.Search's ARGV[1])
	last *Pos   // the last stream id examined ("" delivery id: all of that id examined); nil: none yet
	done bool   // nothing more to examine
}

// searchFound is a delivery a search keeps, at its place in the listing.
type searchFound struct {
	pos Pos
	dl  *types.Delivery
}

// Search walks q's indexes (SearchQuery) in every shard newest first, merged by (index time,
// sequence, delivery id) as Page orders one webhook's, and keeps the deliveries of q.WebhookIDs that q
// keeps, until it has q.Limit of them, has examined every entry, or has spent its budget. Each round
// runs, in one pipeline, a script per shard it reads that merges that shard's indexes from where the
// shard's last round stopped (searchSelect: every shard first, then those furthest behind), then
// reads the records of the entries examined with one MGET per shard; a delivery is final once every
// shard not yet done has been examined past it.
func (r *Reader) Search(ctx context.Context, q SearchQuery) (*SearchPage, error) {
	page := &SearchPage{Deliveries: []*types.Delivery{}, commands: searchSetupCommands}
	var start *Pos
	switch {
	case q.Cursor != "":
		p, err := decodeCursorAs(q.Cursor, q.cursorVersion())
		if err != nil {
			return nil, err
		}
		start = &p
	case !q.To.IsZero():
		start = &Pos{MS: q.To.UnixMilli() + 1} // exclusive: every entry of To's millisecond is after it
	}
	if len(q.WebhookIDs) == 0 {
		page.Stopped = SearchStoppedEnd
		return page, nil
	}
	if err := r.Load(ctx); err != nil {
		return nil, err
	}
	q.scope = make(map[string]bool, len(q.WebhookIDs))
	for _, id := range q.WebhookIDs {
		q.scope[id] = true
	}
	perShard := len(q.indexes(r.Keys, 0)) // index keys per shard
	shards := make([]searchShard, r.Keys.Shards)
	for s := range shards {
		shards[s].from = "+"
		switch {
		case start != nil && start.ID == "": // every entry of its stream id was examined: after it
			shards[s].from = "(" + start.streamID()
		case start != nil:
			shards[s].from = start.streamID() // inclusive; what is not after start is dropped below
		}
	}
	var held []searchFound // kept, not yet known to be final
	for {
		sel := searchSelect(shards, page.commands == searchSetupCommands)
		if len(sel) == 0 {
			break
		}
		examineLeft := SearchExamineBudget - page.examined
		// A round costs per shard read a script, its index reads (each index at least once) and an MGET.
		reads := (SearchCommandBudget - page.commands - 2*len(sel)) / len(sel)
		first := page.commands == searchSetupCommands
		if !first && (reads < perShard+1 || examineLeft < len(sel)) {
			return page.stop(SearchStoppedBudget, searchFrontier(shards), q.cursorVersion()), nil
		}
		reads = max(reads, perShard+1)
		// Each shard's share of what is left to examine, up to a few entries in the first round (which
		// reads every shard, most of them for later) and searchChunk after it, and, unfiltered, no more
		// than the deliveries still wanted need; at least two entries of each index (a round reads each
		// index at least once anyway).
		chunk := searchChunk
		if first {
			chunk = searchFirstChunk
		}
		want := min(examineLeft/len(sel), max(chunk, 2*perShard))
		if !q.filtered() {
			want = min(want, max((q.Limit-len(page.Deliveries))/len(sel)+2, 2*perShard))
		}
		found, err := r.searchRound(ctx, q, shards, sel, start, max(want, 1), reads, page)
		if err != nil {
			return nil, err
		}
		held = append(held, found...)
		frontier := searchFrontier(shards)
		slices.SortFunc(held, func(a, b searchFound) int { return compare(a.pos, b.pos) })
		final := len(held)
		if frontier != nil {
			final = 0
			for final < len(held) && !frontier.Before(held[final].pos) {
				final++
			}
		}
		for i, f := range held[:final] {
			page.Deliveries = append(page.Deliveries, f.dl)
			if len(page.Deliveries) == q.Limit {
				if frontier != nil || i < len(held)-1 { // more may follow
					return page.stop(SearchStoppedLimit, &f.pos, q.cursorVersion()), nil
				}
				break
			}
		}
		held = held[final:]
		if len(page.Deliveries) == q.Limit {
			break
		}
	}
	return page.stop(SearchStoppedEnd, nil, 0), nil
}

// stop ends the page for a reason, with a cursor of version v after at (none for nil).
func (p *SearchPage) stop(why string, at *Pos, v byte) *SearchPage {
	p.Stopped = why
	if at != nil {
		p.Next = at.cursorAs(v)
	}
	return p
}

// searchFirstChunk and searchChunk are the most entries a search's first round and a later one
// examine in one shard, unless the shard has more indexes (a round examines two entries of each at
// least).
const searchFirstChunk, searchChunk = 4, 64

// searchSelect picks the shards a round reads: every shard not done in the first round; then the
// newest-placed of them (those whose last examined entry comes first in the listing), at most a
// quarter, since the listing can move on only past the newest last entry examined (searchFrontier):
// reading the others first would examine entries that wait for it.
func searchSelect(shards []searchShard, first bool) []int {
	var sel []int
	for s, sh := range shards {
		if !sh.done {
			sel = append(sel, s)
		}
	}
	if first || len(sel) <= 1 {
		return sel
	}
	slices.SortStableFunc(sel, func(a, b int) int {
		la, lb := shards[a].last, shards[b].last
		switch {
		case la == nil && lb == nil:
			return 0
		case la == nil:
			return -1
		case lb == nil:
			return 1
		}
		return compare(*la, *lb)
	})
	return sel[:max(1, (len(sel)+3)/4)]
}

// searchFrontier is the newest last stream id examined of the shards not done: every entry up to it
// (in listing order) has been examined in every shard. nil when every shard is done.
func searchFrontier(shards []searchShard) *Pos {
	var f *Pos
	for _, sh := range shards {
		if !sh.done && sh.last != nil && (f == nil || sh.last.Before(*f)) {
			f = sh.last
		}
	}
	return f
}

// searchRound runs one round of a search: up to want entries of each shard not done, examined from
// where the shard stopped with at most reads index reads; it updates the shards and page's costs and
// returns the deliveries kept of the entries after start.
func (r *Reader) searchRound(ctx context.Context, q SearchQuery, shards []searchShard, sel []int, start *Pos, want, reads int, page *SearchPage) ([]searchFound, error) {
	calls := make([]rdb.ShardCall, 0, len(sel))
	for _, s := range sel {
		sh := shards[s]
		calls = append(calls, rdb.ShardCall{Shard: s, Script: rdb.Search, Keys: q.indexes(r.Keys, s), Args: []any{sh.from, want, reads}})
	}
	if err := rdb.EvalAll(ctx, r.Client, calls); err != nil {
		return nil, fmt.Errorf("webhooks: search deliveries: %w", err)
	}
	var entries []Entry
	for _, c := range calls {
		page.commands++
		if len(c.Cmd.Args()) > 0 && c.Cmd.Args()[0] == "eval" {
			page.commands++ // the server lacked the script: EVALSHA, then EVAL
		}
		got, called, err := searchReply(c, start, q.From, &shards[c.Shard])
		if err != nil {
			return nil, err
		}
		page.commands += called
		entries = append(entries, got...)
	}
	return r.searchRecords(ctx, q, entries, page)
}

// searchReply reads a shard's script reply: it moves the shard on (a shard examined to before from is
// done) and returns its entries after start, and how many commands the script called.
func searchReply(c rdb.ShardCall, start *Pos, from time.Time, sh *searchShard) ([]Entry, int, error) {
	reply, err := c.Cmd.Slice()
	if err != nil {
		return nil, 0, fmt.Errorf("webhooks: search deliveries in shard %d: %w", c.Shard, err)
	}
	if len(reply) < 4 || (len(reply)-4)%4 != 0 {
		return nil, 0, fmt.Errorf("webhooks: search deliveries in shard %d: a reply of %d values", c.Shard, len(reply))
	}
	more, _ := reply[0].(int64)
	ms, _ := reply[1].(int64)
	seq, _ := reply[2].(int64)
	called, _ := reply[3].(int64)
	var out []Entry
	for i := 4; i < len(reply); i += 4 {
		k, _ := reply[i].(int64)
		id, _ := reply[i+1].(string)
		hash, _ := reply[i+2].(string)
		x, _ := reply[i+3].(string)
		e, ok := EntryOf(c.Shard, redis.XMessage{ID: id, Values: map[string]any{"d": hash, "x": x}})
		if ok && k >= 1 && int(k) <= len(c.Keys) && (start == nil || start.Before(e.Pos)) {
			out = append(out, e)
		}
	}
	if ms != 0 || seq != 0 {
		sh.last = &Pos{MS: ms, Seq: seq}
		sh.from = "(" + strconv.FormatInt(ms, 10) + "-" + strconv.FormatInt(seq, 10)
	}
	// An entry indexed before from was created before it too: the shard has nothing more to keep.
	sh.done = more == 0 || !from.IsZero() && ms < from.UnixMilli()
	return out, int(called), nil
}

// searchRecords reads the records of a round's entries, with one MGET per shard, and returns the
// deliveries q keeps. An entry whose record has expired or is gone, belongs to a webhook outside
// q.WebhookIDs or was indexed again by a later Redeliver keeps nothing.
func (r *Reader) searchRecords(ctx context.Context, q SearchQuery, entries []Entry, page *SearchPage) ([]searchFound, error) {
	page.examined += len(entries)
	now := time.Now().UnixMilli()
	byShard := map[int][]int{}
	for i, e := range entries {
		if e.Expiry > now {
			byShard[e.Shard] = append(byShard[e.Shard], i)
		}
	}
	if len(byShard) == 0 {
		return nil, nil
	}
	ids := make(map[int][]string, len(byShard))
	for s, idx := range byShard {
		for _, i := range idx {
			ids[s] = append(ids[s], entries[i].ID)
		}
	}
	page.commands += len(ids) // an MGET per shard
	recs, err := rdb.ReadShardRecords(ctx, r.Client, r.Keys, ids)
	if err != nil {
		return nil, fmt.Errorf("webhooks: search deliveries: %w", err)
	}
	var out []searchFound
	for s, idx := range byShard {
		for j, i := range idx {
			e, rec := entries[i], recs[s][j]
			if rec == nil || !q.scope[rec.WebhookID] || rdb.UnixMilli(rec.ExpiresAt) != e.Expiry || !q.Keeps(&rec.Delivery) {
				continue
			}
			rec.History = nil // GET /deliveries/{id} has it
			out = append(out, searchFound{pos: e.Pos, dl: &rec.Delivery})
		}
	}
	return out, nil
}
