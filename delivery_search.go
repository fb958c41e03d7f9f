package webhooks

// The search of deliveries across webhooks (GET /deliveries without an id): the webhooks' indexes
// walked newest first, merged by time, under a budget of Redis commands per call, counted as the
// server counts them (INFO commandstats): each command sent, and each command a script calls.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/smartdrop/webhooks/internal/rdb"
)

// Bounds of one search of deliveries across webhooks (GET /deliveries without an id).
const (
	// SearchCommandBudget is the most Redis commands one search costs the server, as INFO
	// commandstats counts them: each command sent and each command a script calls (the index reads of
	// rdb.Search), the scope's webhooks read included. A search that has not found its Limit of
	// deliveries by then stops with a cursor where it stopped, and says it stopped for the budget. Its
	// first round reads each of the scope's indexes in each shard at least once whatever the budget,
	// so that repeating it with its cursor makes progress: with more (webhook, shard) indexes than
	// about the budget, that round costs more.
	SearchCommandBudget = 1800
	// SearchExamineBudget is the most index entries one search examines (the delivery records it
	// reads), whatever their filters; the entries of one index millisecond are examined together, so a
	// search may examine a few more.
	SearchExamineBudget = 2048
	// searchSetupCommands are the commands a search costs the server besides its rounds, at most: the
	// shard count, the scope's webhooks (their ids, then their records) and, for the answer, their
	// circuits (viewDeliveries).
	searchSetupCommands = 5
)

// Why a search stopped (DeliverySearchPage.Stopped).
const (
	// SearchStoppedEnd: no delivery in the scope is left to examine; there is no cursor.
	SearchStoppedEnd = "end"
	// SearchStoppedLimit: the page holds Limit deliveries; the cursor continues after the last.
	SearchStoppedLimit = "limit"
	// SearchStoppedBudget: the search spent its budget (SearchCommandBudget, SearchExamineBudget)
	// before finding Limit deliveries; the cursor continues where it stopped.
	SearchStoppedBudget = "budget"
)

// searchQuery is one search across the webhooks hooks.
type searchQuery struct {
	hooks     []*Webhook
	status    Status
	eventType string
	from, to  time.Time
	limit     int
	cursor    string // "" starts at the newest (or at to)
}

// filtered reports whether q keeps only some deliveries.
func (q searchQuery) filtered() bool {
	return q.status != "" || q.eventType != "" || !q.from.IsZero() || !q.to.IsZero()
}

// keeps reports whether q keeps the delivery dl.
func (q searchQuery) keeps(dl *Delivery) bool {
	return (q.status == "" || dl.Status == q.status) && (q.eventType == "" || dl.EventType == q.eventType) &&
		within(dl.CreatedAt, q.from, q.to)
}

// searchPage is the answer of a search: the deliveries found, newest first, why it stopped, the
// cursor that continues it ("" at the end) and what it cost.
type searchPage struct {
	deliveries []*Delivery
	stopped    string
	next       string
	commands   int // Redis commands the server ran: each sent, and each a script called
	examined   int // index entries examined
}

// searchShard is a shard's state during a search.
type searchShard struct {
	from string   // where its next read starts (rdb.Search's ARGV[1])
	last *pagePos // the last stream id examined ("" delivery id: all of that id examined); nil: none yet
	done bool     // nothing more to examine
}

// searchFound is a delivery a search keeps, at its place in the listing.
type searchFound struct {
	pos pagePos
	dl  *Delivery
}

// searchDeliveries walks the indexes of q.hooks in every shard newest first, merged by (index time,
// sequence, delivery id) as DeliveryRepo.Page orders one webhook's, and keeps the deliveries q keeps,
// until it has q.limit of them, has examined every entry, or has spent its budget. Each round runs, in
// one pipeline, a script per shard that merges that shard's indexes of every webhook and reads on from
// where the shard's last round stopped, then reads the records of the entries examined with one MGET
// per shard; a delivery is final once every shard not yet done has been examined past it.
func (d *Dispatcher) searchDeliveries(ctx context.Context, q searchQuery) (*searchPage, error) {
	page := &searchPage{deliveries: []*Delivery{}, commands: searchSetupCommands}
	var start *pagePos
	switch {
	case q.cursor != "":
		p, err := decodeCursor(q.cursor)
		if err != nil {
			return nil, err
		}
		start = &p
	case !q.to.IsZero():
		start = &pagePos{ms: q.to.UnixMilli() + 1} // exclusive: every entry of to's millisecond is after it
	}
	if len(q.hooks) == 0 {
		page.stopped = SearchStoppedEnd
		return page, nil
	}
	if err := loadKeys(ctx, d.keys, d.rdb); err != nil {
		return nil, err
	}
	shards := make([]searchShard, d.keys.Shards)
	for s := range shards {
		shards[s].from = "+"
		switch {
		case start != nil && start.id == "": // every entry of its stream id was examined: after it
			shards[s].from = "(" + start.streamID()
		case start != nil:
			shards[s].from = start.streamID() // inclusive; what is not after start is dropped below
		}
	}
	var held []searchFound // kept, not yet known to be final
	for {
		active := 0
		for _, sh := range shards {
			if !sh.done {
				active++
			}
		}
		examineLeft := SearchExamineBudget - page.examined
		if active == 0 {
			break
		}
		// A round costs per shard a script, its index reads (each index at least once) and an MGET.
		reads := (SearchCommandBudget - page.commands - 2*active) / active
		first := page.commands == searchSetupCommands
		if !first && (reads < len(q.hooks)+1 || examineLeft < active) {
			return page.stop(SearchStoppedBudget, searchFrontier(shards)), nil
		}
		reads = max(reads, len(q.hooks)+1)
		// Enough for the deliveries still wanted when every entry is kept, and at least two entries of
		// each index (a round reads each index at least once anyway: more work than its entries); a
		// filtered search reads its whole budget at once.
		want := examineLeft / active
		if !q.filtered() {
			want = min(want, max((q.limit-len(page.deliveries))/active+2, 2*len(q.hooks)))
		}
		found, err := d.searchRound(ctx, q, shards, start, max(want, 1), reads, page)
		if err != nil {
			return nil, err
		}
		held = append(held, found...)
		frontier := searchFrontier(shards)
		slices.SortFunc(held, func(a, b searchFound) int { return comparePos(a.pos, b.pos) })
		final := len(held)
		if frontier != nil {
			final = 0
			for final < len(held) && !frontier.before(held[final].pos) {
				final++
			}
		}
		for i, f := range held[:final] {
			page.deliveries = append(page.deliveries, f.dl)
			if len(page.deliveries) == q.limit {
				if frontier != nil || i < len(held)-1 { // more may follow
					return page.stop(SearchStoppedLimit, &f.pos), nil
				}
				break
			}
		}
		held = held[final:]
		if len(page.deliveries) == q.limit {
			break
		}
	}
	return page.stop(SearchStoppedEnd, nil), nil
}

// stop ends the page for a reason, with a cursor after at (none for nil).
func (p *searchPage) stop(why string, at *pagePos) *searchPage {
	p.stopped = why
	if at != nil {
		p.next = at.cursor()
	}
	return p
}

// searchFrontier is the newest last stream id examined of the shards not done: every entry up to it
// (in listing order) has been examined in every shard. nil when every shard is done.
func searchFrontier(shards []searchShard) *pagePos {
	var f *pagePos
	for _, sh := range shards {
		if !sh.done && sh.last != nil && (f == nil || sh.last.before(*f)) {
			f = sh.last
		}
	}
	return f
}

// comparePos orders positions as the listing does.
func comparePos(a, b pagePos) int {
	switch {
	case a.before(b):
		return -1
	case b.before(a):
		return 1
	}
	return 0
}

// searchRound runs one round of a search: up to want entries of each shard not done, examined from
// where the shard stopped with at most reads index reads; it updates the shards and page's costs and
// returns the deliveries kept of the entries after start.
func (d *Dispatcher) searchRound(ctx context.Context, q searchQuery, shards []searchShard, start *pagePos, want, reads int, page *searchPage) ([]searchFound, error) {
	calls := make([]statsCall, 0, len(shards))
	for s, sh := range shards {
		if sh.done {
			continue
		}
		keys := make([]string, len(q.hooks))
		for i, wh := range q.hooks {
			keys[i] = d.keys.Index(s, wh.ID)
		}
		calls = append(calls, statsCall{shard: s, script: rdb.Search, keys: keys, args: []any{sh.from, want, reads}})
	}
	if err := d.evalAll(ctx, calls); err != nil {
		return nil, fmt.Errorf("webhooks: search deliveries: %w", err)
	}
	var entries []searchEntry
	for _, c := range calls {
		page.commands++
		if len(c.cmd.Args()) > 0 && c.cmd.Args()[0] == "eval" {
			page.commands++ // the server lacked the script: EVALSHA, then EVAL
		}
		got, called, err := searchReply(c, q.hooks, start, q.from, &shards[c.shard])
		if err != nil {
			return nil, err
		}
		page.commands += called
		entries = append(entries, got...)
	}
	return d.searchRecords(ctx, q, entries, page)
}

// searchEntry is an index entry a search examined, with the webhook whose index holds it.
type searchEntry struct {
	pageEntry
	webhookID string
}

// searchReply reads a shard's script reply: it moves the shard on (a shard examined to before from is
// done) and returns its entries after start, and how many commands the script called.
func searchReply(c statsCall, hooks []*Webhook, start *pagePos, from time.Time, sh *searchShard) ([]searchEntry, int, error) {
	reply, err := c.cmd.Slice()
	if err != nil {
		return nil, 0, fmt.Errorf("webhooks: search deliveries in shard %d: %w", c.shard, err)
	}
	if len(reply) < 4 || (len(reply)-4)%4 != 0 {
		return nil, 0, fmt.Errorf("webhooks: search deliveries in shard %d: a reply of %d values", c.shard, len(reply))
	}
	more, _ := reply[0].(int64)
	ms, _ := reply[1].(int64)
	seq, _ := reply[2].(int64)
	called, _ := reply[3].(int64)
	var out []searchEntry
	for i := 4; i < len(reply); i += 4 {
		k, _ := reply[i].(int64)
		id, _ := reply[i+1].(string)
		hash, _ := reply[i+2].(string)
		x, _ := reply[i+3].(string)
		e, ok := indexEntry(c.shard, redis.XMessage{ID: id, Values: map[string]any{"d": hash, "x": x}})
		if ok && k >= 1 && int(k) <= len(hooks) && (start == nil || start.before(e.pagePos)) {
			out = append(out, searchEntry{pageEntry: e, webhookID: hooks[k-1].ID})
		}
	}
	if ms != 0 || seq != 0 {
		sh.last = &pagePos{ms: ms, seq: seq}
		sh.from = "(" + strconv.FormatInt(ms, 10) + "-" + strconv.FormatInt(seq, 10)
	}
	// An entry indexed before from was created before it too: the shard has nothing more to keep.
	sh.done = more == 0 || !from.IsZero() && ms < from.UnixMilli()
	return out, int(called), nil
}

// searchRecords reads the records of a round's entries, with one MGET per shard, and returns the
// deliveries q keeps. An entry whose record has expired or is gone, belongs to another webhook or was
// indexed again by a later Redeliver keeps nothing.
func (d *Dispatcher) searchRecords(ctx context.Context, q searchQuery, entries []searchEntry, page *searchPage) ([]searchFound, error) {
	page.examined += len(entries)
	now := time.Now().UnixMilli()
	byShard := map[int][]int{}
	for i, e := range entries {
		if e.expiry > now {
			byShard[e.shard] = append(byShard[e.shard], i)
		}
	}
	if len(byShard) == 0 {
		return nil, nil
	}
	pipe := d.rdb.Pipeline()
	gets := make(map[int]*redis.SliceCmd, len(byShard))
	for s, idx := range byShard {
		keys := make([]string, len(idx))
		for j, i := range idx {
			keys[j] = d.keys.Delivery(s, entries[i].id)
		}
		gets[s] = pipe.MGet(ctx, keys...)
	}
	page.commands += len(gets)
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("webhooks: search deliveries: %w", err)
	}
	var out []searchFound
	for s, idx := range byShard {
		vals := gets[s].Val()
		for j, i := range idx {
			raw, _ := vals[j].(string)
			if raw == "" {
				continue
			}
			e := entries[i]
			rec, err := rdb.ParseRecord(e.id, raw)
			if err != nil || rec.WebhookID != e.webhookID || rdb.UnixMilli(rec.ExpiresAt) != e.expiry || !q.keeps(&rec.Delivery) {
				continue
			}
			rec.History = nil // GET /deliveries/{id} has it
			out = append(out, searchFound{pos: e.pagePos, dl: &rec.Delivery})
		}
	}
	return out, nil
}
