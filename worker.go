package webhooks

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

const (
	// idleWait is the longest Run waits between passes when nothing is due.
	idleWait = 250 * time.Millisecond
	// minWait keeps Run from spinning on a due time that is a hair away.
	minWait = 5 * time.Millisecond
	// maxErrorBackoff bounds Run's wait after a pass that failed.
	maxErrorBackoff = 5 * time.Second
)

// leaseScript leases due deliveries of one shard: each candidate still due has its schedule entry moved
// to the lease's end and the lease token written into its record's head, so no other worker takes it
// until the lease expires. A candidate already leased under its token and lease end was leased by this
// very call, run again by a client whose reply was lost: it is reported leased again. Every candidate is
// checked before the first write.
//
// KEYS[1] -> {P:s}:due
// KEYS[1+i] (i = 1..n) -> delivery key of candidate i
// ARGV[1] -> now (ms)
// ARGV[2] -> lease end (ms)
// ARGV[1+2i], ARGV[2+2i] -> candidate i's delivery id and lease token
// returns per candidate: 0 when it is not due any more (another worker leased it), 1 when its record has
// expired, 2 when its key holds no record (the schedule entry of both is removed), or the record once
// leased
var leaseScript = redis.NewScript(`
local now, leaseEnd = tonumber(ARGV[1]), ARGV[2]
local n = #KEYS - 1
local state = {}
for i = 1, n do
  local score = redis.call('ZSCORE', KEYS[1], ARGV[1 + 2 * i])
  if score and tonumber(score) == tonumber(leaseEnd) and
      redis.call('GETRANGE', KEYS[1 + i], 0, ` + strconv.Itoa(tokenLen) + `) == ARGV[2 + 2 * i] .. 'L' then
    state[i] = 'mine'
  elseif not score or tonumber(score) > now then
    state[i] = 0
  else
    local t = redis.call('TYPE', KEYS[1 + i])['ok']
    if t == 'none' then
      state[i] = 1
    elseif t == 'string' and redis.call('STRLEN', KEYS[1 + i]) >= ` + strconv.Itoa(recordHeadLen) + ` then
      state[i] = 'lease'
    else
      state[i] = 2
    end
  end
end
local reply = {}
for i = 1, n do
  local id = ARGV[1 + 2 * i]
  if state[i] == 'lease' then
    redis.call('ZADD', KEYS[1], leaseEnd, id)
    local rec = ARGV[2 + 2 * i] .. 'L' .. string.sub(redis.call('GET', KEYS[1 + i]), ` + strconv.Itoa(tokenLen+2) + `)
    redis.call('SET', KEYS[1 + i], rec, 'KEEPTTL')
    reply[i] = rec
  elseif state[i] == 'mine' then
    reply[i] = redis.call('GET', KEYS[1 + i])
  else
    if state[i] ~= 0 then redis.call('ZREM', KEYS[1], id) end
    reply[i] = state[i]
  end
end
return reply
`)

// unscheduleScript removes a leased delivery from the schedule without recording an attempt, and
// releases its lease: for a record that cannot be decoded, or that is not pending.
//
// KEYS[1] -> {P:s}:due
// KEYS[2] -> delivery key
// ARGV[1] -> delivery id
// ARGV[2] -> lease token
// returns 1 when removed, 0 when the lease was lost
var unscheduleScript = redis.NewScript(`
local rec = redis.call('GET', KEYS[2])
if not rec or string.sub(rec, 1, ` + strconv.Itoa(tokenLen+1) + `) ~= ARGV[2] .. 'L' then return 0 end
redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('SET', KEYS[2], ARGV[2] .. '-' .. string.sub(rec, ` + strconv.Itoa(tokenLen+2) + `), 'KEEPTTL')
return 1
`)

// leasedDelivery is a due delivery this worker holds the lease of.
type leasedDelivery struct {
	shard int
	rec   *record
}

// ProcessDue makes one pass of the retry worker: it leases up to Options.Concurrency due deliveries
// across all shards, attempts them concurrently and records each outcome. It returns how many
// deliveries it settled. Records that cannot be decoded are taken off the schedule, and reported in the
// error (wrapped) while the others go on.
func (d *Dispatcher) ProcessDue(ctx context.Context) (int, error) {
	n, _, err := d.processDue(ctx)
	return n, err
}

// processDue is ProcessDue that also returns the earliest due time it saw in the future (zero if none).
func (d *Dispatcher) processDue(ctx context.Context) (int, time.Time, error) {
	now := d.now()
	limit := d.opts.Concurrency
	d.shardMu.Lock()
	first := int(d.nextShard)
	d.nextShard = (d.nextShard + 1) % shardCount
	d.shardMu.Unlock()

	pipe := d.rdb.Pipeline()
	heads := make([]*redis.ZSliceCmd, shardCount)
	for k := range shardCount {
		heads[k] = pipe.ZRangeWithScores(ctx, d.keys.scheduleKey((first+k)%shardCount), 0, int64(limit-1))
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return 0, time.Time{}, fmt.Errorf("webhooks: read schedules: %w", err)
	}

	var (
		nextDue time.Time
		jobs    []leasedDelivery
		errs    []error
	)
	for k, cmd := range heads {
		shard := (first + k) % shardCount
		var due []string
		for _, z := range cmd.Val() {
			if at := msTime(int64(z.Score)); z.Score > float64(now.UnixMilli()) {
				if nextDue.IsZero() || at.Before(nextDue) {
					nextDue = at
				}
				break
			}
			if len(jobs)+len(due) < limit {
				id, _ := z.Member.(string)
				due = append(due, id)
			}
		}
		if len(due) == 0 {
			continue
		}
		leased, err := d.leaseShard(ctx, shard, now, due)
		if err != nil {
			errs = append(errs, err)
		}
		jobs = append(jobs, leased...)
	}
	if len(jobs) == 0 {
		return 0, nextDue, errors.Join(errs...)
	}

	// The lease is taken: attempt even if ctx ends now, within the attempt's own timeout.
	actx := context.WithoutCancel(ctx)
	targets, err := d.loadTargets(actx, jobs)
	if err != nil {
		// Nothing attempted: the leases expire and a later pass takes the deliveries again.
		return 0, nextDue, errors.Join(append(errs, err)...)
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	settled := 0
	for i, job := range jobs {
		if err := targets.broken[job.rec.WebhookID]; err != nil {
			// Left leased: it is taken again once the webhook can be read.
			mu.Lock()
			errs = append(errs, fmt.Errorf("webhooks: delivery %s not attempted: %w", job.rec.ID, err))
			mu.Unlock()
			continue
		}
		wg.Go(func() {
			o := d.attemptLeased(actx, job.rec, targets.webhooks[job.rec.WebhookID], targets.bodies[i])
			err := d.settle(actx, job.shard, []*record{job.rec}, []outcome{o})[0]
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
			} else {
				settled++
			}
		})
	}
	wg.Wait()
	return settled, nextDue, errors.Join(errs...)
}

// leaseShard leases the given due deliveries of one shard and decodes their records.
func (d *Dispatcher) leaseShard(ctx context.Context, shard int, now time.Time, ids []string) ([]leasedDelivery, error) {
	keys := make([]string, 1, 1+len(ids))
	keys[0] = d.keys.scheduleKey(shard)
	args := make([]any, 2, 2+2*len(ids))
	args[0], args[1] = now.UnixMilli(), now.Add(d.lease).UnixMilli()
	tokens := make([]string, len(ids))
	for i, id := range ids {
		tokens[i] = randomHex(tokenLen / 2)
		keys = append(keys, d.keys.deliveryKey(shard, id))
		args = append(args, id, tokens[i])
	}
	reply, err := leaseScript.Run(ctx, d.rdb, keys, args...).Slice()
	if err == nil && len(reply) != len(ids) {
		err = fmt.Errorf("unexpected reply of %d items for %d deliveries", len(reply), len(ids))
	}
	if err != nil {
		return nil, fmt.Errorf("webhooks: lease shard %d: %w", shard, err)
	}
	var out []leasedDelivery
	var errs []error
	for i, item := range reply {
		switch v := item.(type) {
		case string:
			rec, err := parseRecord(ids[i], v)
			if err == nil && rec.Status != StatusPending {
				err = fmt.Errorf("%w: %s is scheduled but %s", ErrCorruptRecord, ids[i], rec.Status)
			}
			if err != nil {
				d.log.Error("webhooks: skipping undecodable delivery", "delivery_id", ids[i], "error", err)
				errs = append(errs, err)
				if _, uerr := unscheduleScript.Run(ctx, d.rdb, []string{keys[0], keys[1+i]}, ids[i], tokens[i]).Result(); uerr != nil {
					errs = append(errs, fmt.Errorf("webhooks: unschedule %s: %w", ids[i], uerr))
				}
				continue
			}
			rec.holdLease(tokens[i], now.Add(d.lease))
			out = append(out, leasedDelivery{shard: shard, rec: rec})
		case int64:
			if v == 2 {
				err := fmt.Errorf("%w: %s is not a record", ErrCorruptRecord, ids[i])
				d.log.Error("webhooks: dropped undecodable delivery from the schedule", "delivery_id", ids[i], "error", err)
				errs = append(errs, err)
			}
		}
	}
	return out, errors.Join(errs...)
}

// leasedTargets are the webhooks and request bodies of leased deliveries.
type leasedTargets struct {
	webhooks map[string]*storedWebhook // a deleted webhook is missing
	broken   map[string]error          // webhooks whose stored JSON cannot be decoded
	bodies   [][]byte                  // per job; nil when the event body has expired
}

// loadTargets reads, in one round trip, the webhooks and request bodies of leased deliveries (each
// event's body once).
func (d *Dispatcher) loadTargets(ctx context.Context, jobs []leasedDelivery) (*leasedTargets, error) {
	ids := make([]string, 0, len(jobs))
	seen := map[string]bool{}
	for _, j := range jobs {
		if !seen[j.rec.WebhookID] {
			seen[j.rec.WebhookID] = true
			ids = append(ids, j.rec.WebhookID)
		}
	}
	pipe := d.rdb.Pipeline()
	whs := pipe.HMGet(ctx, d.keys.webhooksKey(), ids...)
	gets := map[string]*redis.StringCmd{}
	for _, j := range jobs {
		key := d.keys.eventKey(j.shard, j.rec.EventID)
		if gets[key] == nil {
			gets[key] = pipe.Get(ctx, key)
		}
	}
	_, _ = pipe.Exec(ctx) // errors are read per command: a missing body is not one
	if err := whs.Err(); err != nil {
		return nil, fmt.Errorf("webhooks: load webhooks: %w", err)
	}
	t := &leasedTargets{bodies: make([][]byte, len(jobs))}
	t.webhooks, t.broken = d.webhooks.decodeMany(ids, whs.Val())
	for i, j := range jobs {
		g := gets[d.keys.eventKey(j.shard, j.rec.EventID)]
		switch err := g.Err(); {
		case err == nil:
			t.bodies[i] = []byte(g.Val())
		case !isNil(err):
			return nil, fmt.Errorf("webhooks: load event bodies: %w", err)
		}
	}
	return t, nil
}

// attemptLeased attempts a leased delivery, or refuses to when its webhook is gone or disabled.
func (d *Dispatcher) attemptLeased(ctx context.Context, rec *record, wh *storedWebhook, body []byte) outcome {
	switch {
	case wh == nil:
		return refuse(rec, "webhook deleted: not attempted")
	case wh.Disabled && !isTestDelivery(rec):
		return refuse(rec, "webhook disabled: not attempted")
	case body == nil:
		return refuse(rec, "event body expired: not attempted")
	}
	return d.decide(rec, d.attempt(ctx, wh, rec, body))
}

// isTestDelivery reports whether a delivery was made by SendTest, which reaches disabled webhooks too.
func isTestDelivery(rec *record) bool {
	return rec.EventType == TestEventType && strings.HasPrefix(rec.EventID, "test_")
}

// Run is the retry worker: it makes passes (ProcessDue) while deliveries are due and waits briefly
// (at most 250ms, less when the next retry is sooner) when none are. Any number of replicas may run it
// at once; each due attempt is made by one of them. It returns nil when ctx ends, after the attempts in
// flight have finished and been recorded.
func (d *Dispatcher) Run(ctx context.Context) error {
	backoff := 100 * time.Millisecond
	for {
		n, next, err := d.processDue(ctx)
		if ctx.Err() != nil {
			return nil
		}
		wait := idleWait
		switch {
		case err != nil && n == 0:
			d.log.Warn("webhooks: worker pass failed", "error", err)
			wait, backoff = backoff, min(2*backoff, maxErrorBackoff)
		case err != nil:
			d.log.Warn("webhooks: worker pass had errors", "settled", n, "error", err)
			fallthrough
		default:
			backoff = 100 * time.Millisecond
			if n >= d.opts.Concurrency {
				wait = 0 // a full pass: more may be due
			} else if !next.IsZero() {
				wait = min(wait, max(next.Sub(d.now()), minWait))
			}
		}
		if wait == 0 {
			continue
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
	}
}
