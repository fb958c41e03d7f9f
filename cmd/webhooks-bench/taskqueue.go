package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/smartdrop/webhooks/cmd/webhooks-bench/internal/e2e"
)

// The task-queue baseline emulates what a Go user usually reaches for: a Redis-backed task queue with
// task-id deduplication in the style of asynq (its enqueue-unique, dequeue and mark-as-complete scripts,
// slightly simplified), one task per (webhook, event), and -concurrency workers that poll the queue.
// Per delivery: enqueue EVALSHA + SET NX + EXISTS + HSET + LPUSH (5), dequeue EVALSHA + EXISTS +
// RPOPLPUSH + HSET + HDEL + ZADD + HGET (7), complete EVALSHA + LREM + ZREM + HSET + PEXPIRE + INCR +
// INCR (7): 19 commands, plus the polls of idle workers (EVALSHA + EXISTS + RPOPLPUSH).

// tqEnqueue: KEYS unique lock, task hash, pending list; ARGV task id, lock TTL (ms), message, now (s).
// Returns 1 when enqueued, -1 when the unique lock is held (a duplicate), 0 when the task id exists.
var tqEnqueue = redis.NewScript(`
if not redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return -1 end
if redis.call('EXISTS', KEYS[2]) == 1 then return 0 end
redis.call('HSET', KEYS[2], 'msg', ARGV[3], 'state', 'pending', 'pending_since', ARGV[4])
redis.call('LPUSH', KEYS[3], ARGV[1])
return 1
`)

// tqDequeue: KEYS paused flag, pending list, active list, lease zset; ARGV lease end (s), task key
// prefix. Returns {task id, message} or nil when the queue is empty.
var tqDequeue = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 0 then
  local id = redis.call('RPOPLPUSH', KEYS[2], KEYS[3])
  if id then
    local key = ARGV[2] .. id
    redis.call('HSET', key, 'state', 'active')
    redis.call('HDEL', key, 'pending_since')
    redis.call('ZADD', KEYS[4], ARGV[1], id)
    return {id, redis.call('HGET', key, 'msg')}
  end
end
return nil
`)

// tqComplete: KEYS active list, lease zset, task hash, processed-today counter, processed total; ARGV
// task id, retention (ms), now (s), counter TTL (ms).
var tqComplete = redis.NewScript(`
if redis.call('LREM', KEYS[1], 0, ARGV[1]) == 0 then return redis.error_reply('NOT FOUND') end
if redis.call('ZREM', KEYS[2], ARGV[1]) == 0 then return redis.error_reply('NOT FOUND') end
redis.call('HSET', KEYS[3], 'state', 'completed', 'completed_at', ARGV[3])
redis.call('PEXPIRE', KEYS[3], ARGV[2])
if redis.call('INCR', KEYS[4]) == 1 then redis.call('PEXPIRE', KEYS[4], ARGV[4]) end
redis.call('INCR', KEYS[5])
return 1
`)

// taskMsg is the task as the queue stores it (asynq stores a protobuf with the same fields).
type taskMsg struct {
	ID        string      `json:"id"`
	Type      string      `json:"type"`
	Queue     string      `json:"queue"`
	Retry     int         `json:"retry"`
	Timeout   int64       `json:"timeout"`
	UniqueKey string      `json:"unique_key"`
	Payload   taskPayload `json:"payload"`
}

type taskPayload struct {
	WebhookID string `json:"webhook_id"`
	EventID   string `json:"event_id"`
	MsgID     string `json:"msg_id"`
	Body      string `json:"body"`
}

func taskID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func runTaskQueue(ctx context.Context, e *env, run int, hc *http.Client) (result, error) {
	cfg := e.cfg
	prefix := fmt.Sprintf("%s%dq", e.prefix, run)
	pattern := prefix + ":*"
	defer e.cleanup(pattern)
	res := result{events: cfg.events, pairs: cfg.events * cfg.webhooks}
	rdb, ctr := newClient(cfg)
	defer rdb.Close()
	hooks := newBaselineHooks(e.rcv)
	byID := map[string]*baselineHook{}
	for i := range hooks {
		byID[hooks[i].id] = &hooks[i]
	}
	var (
		paused, pending, active, lease = prefix + ":paused", prefix + ":pending", prefix + ":active", prefix + ":lease"
		processed, processedTotal      = prefix + ":processed:" + time.Now().UTC().Format("2006-01-02"), prefix + ":processed"
		taskPrefix                     = prefix + ":t:"
	)

	// enqueue enqueues one task per webhook for an event; it returns how many were enqueued and how
	// many were rejected as duplicates.
	enqueue := func(ctx context.Context, evtID string) (enq, dup int, err error) {
		body, err := json.Marshal(wireEvent{ID: evtID, Type: e2e.EventType, Timestamp: time.Now().UTC(), Data: e.data})
		if err != nil {
			return 0, 0, err
		}
		for i := range hooks {
			h := &hooks[i]
			unique := prefix + ":unique:webhook:deliver:" + h.id + ":" + evtID
			id := taskID()
			msg, err := json.Marshal(taskMsg{ID: id, Type: "webhook:deliver", Queue: "default", Retry: 25,
				Timeout: 15, UniqueKey: unique, Payload: taskPayload{WebhookID: h.id, EventID: evtID,
					MsgID: "msg_" + h.id + "_" + evtID, Body: string(body)}})
			if err != nil {
				return enq, dup, err
			}
			n, err := tqEnqueue.Run(ctx, rdb, []string{unique, taskPrefix + id, pending},
				id, cfg.retention.Milliseconds(), msg, time.Now().Unix()).Int()
			switch {
			case err != nil:
				return enq, dup, err
			case n == 1:
				enq++
			case n == -1:
				dup++
			default:
				return enq, dup, errors.New("task id conflict")
			}
		}
		return enq, dup, nil
	}

	// work runs the workers until want tasks completed (or ctx ends); it returns the deliveries that
	// succeeded and failed.
	work := func(ctx context.Context, want int, done *atomic.Int64) (ok, failed int, err error) {
		var okN, failedN, completed atomic.Int64
		var errMu sync.Mutex
		var first error
		setErr := func(err error) {
			errMu.Lock()
			if first == nil {
				first = err
			}
			errMu.Unlock()
		}
		wctx, stop := context.WithCancel(ctx)
		defer stop()
		var wg sync.WaitGroup
		for range cfg.concurrency {
			wg.Go(func() {
				for wctx.Err() == nil {
					v, err := tqDequeue.Run(wctx, rdb, []string{paused, pending, active, lease},
						time.Now().Add(30*time.Second).Unix(), taskPrefix).Slice()
					if errors.Is(err, redis.Nil) || err != nil {
						if err != nil && !errors.Is(err, redis.Nil) && wctx.Err() == nil {
							setErr(err)
						}
						select { // empty queue: poll again shortly
						case <-wctx.Done():
						case <-time.After(cfg.tqPoll):
						}
						continue
					}
					id, _ := v[0].(string)
					raw, _ := v[1].(string)
					var m taskMsg
					if err := json.Unmarshal([]byte(raw), &m); err != nil {
						setErr(err)
						failedN.Add(1)
					} else if h := byID[m.Payload.WebhookID]; h == nil {
						setErr(fmt.Errorf("unknown webhook %q", m.Payload.WebhookID))
						failedN.Add(1)
					} else if code, err := post(wctx, hc, h, m.Payload.MsgID, []byte(m.Payload.Body)); err != nil || code < 200 || code > 299 {
						setErr(cmpErr(nil, err, code)) // a real queue would retry it; every attempt succeeds here
						failedN.Add(1)
					} else {
						okN.Add(1)
					}
					if err := tqComplete.Run(context.WithoutCancel(wctx), rdb,
						[]string{active, lease, taskPrefix + id, processed, processedTotal},
						id, cfg.retention.Milliseconds(), time.Now().Unix(), (90 * 24 * time.Hour).Milliseconds()).Err(); err != nil {
						setErr(err)
					}
					done.Add(1)
					if completed.Add(1) >= int64(want) {
						stop()
					}
				}
			})
		}
		wg.Wait()
		if completed.Load() < int64(want) && first == nil {
			first = fmt.Errorf("%d of %d tasks completed", completed.Load(), want)
		}
		return int(okN.Load()), int(failedN.Load()), first
	}

	// fresh enqueues n events from -concurrency goroutines while the workers drain the queue.
	fresh := func(label, idPrefix string, n int) (phaseOut, error) {
		return e.phase(ctx, label, ctr, n*cfg.webhooks, func(ctx context.Context, done *atomic.Int64) (int, int, error) {
			var enqErr error
			var notEnqueued atomic.Int64
			var wg sync.WaitGroup
			wg.Go(func() {
				_, enqErr = e2e.Parallel(ctx, n, cfg.concurrency, nil, func(ctx context.Context, i int) error {
					enq, _, err := enqueue(ctx, e2e.EventID(idPrefix, i))
					notEnqueued.Add(int64(cfg.webhooks - enq))
					return err
				})
			})
			ok, failed, err := work(ctx, n*cfg.webhooks, done)
			wg.Wait()
			return ok, failed + int(notEnqueued.Load()), errors.Join(enqErr, err)
		})
	}
	label := fmt.Sprintf("run %d/%d task queue", run, cfg.runs)
	if _, err := fresh(label+" warm-up", prefix+"-warm", e.warmups()); err != nil {
		return res, err
	}
	var err error
	if res.fresh, err = fresh(label+" fresh", prefix+"-evt-", cfg.events); err != nil {
		return res, err
	}
	if err := e.afterFresh(ctx, &res, pattern, prefix, (cfg.events+e.warmups())*cfg.webhooks); err != nil {
		return res, err
	}
	res.dup, err = e.phase(ctx, label+" duplicates", ctr, cfg.events, func(ctx context.Context, done *atomic.Int64) (int, int, error) {
		var ok, failed atomic.Int64
		_, err := e2e.Parallel(ctx, cfg.events, cfg.concurrency, done, func(ctx context.Context, i int) error {
			enq, dup, err := enqueue(ctx, e2e.EventID(prefix+"-evt-", i))
			ok.Add(int64(dup))
			failed.Add(int64(enq))
			return err
		})
		return int(ok.Load()), int(failed.Load()), err
	})
	return res, err
}
