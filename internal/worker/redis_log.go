package worker

import (
	"log/slog"
	"sync"
	"time"
)

// RedisDownEvery is how often, at most, a worker that cannot reach Redis says so.
const RedisDownEvery = 10 * time.Second

// RedisLog is how a worker says what is wrong with its Redis: that it cannot reach it, one warning per
// RedisDownEvery however often its passes fail, and that Redis may evict keys. Through the Logger it
// is given or, when none is, slog.Default(): an outage must not go unseen because a service set no
// logger. Safe for concurrent use.
type RedisLog struct {
	log  *slog.Logger // nil: slog.Default() at the time of the warning
	mu   sync.Mutex
	last time.Time // of the last warning that Redis is down
}

// NewRedisLog is a RedisLog through log (nil for slog.Default()).
func NewRedisLog(log *slog.Logger) *RedisLog { return &RedisLog{log: log} }

// logger is the log's Logger now.
func (l *RedisLog) logger() *slog.Logger {
	if l.log == nil {
		return slog.Default()
	}
	return l.log
}

// Down logs a failed pass of the worker, unless one was logged within RedisDownEvery.
func (l *RedisLog) Down(now time.Time, msg string, args ...any) {
	l.mu.Lock()
	quiet := !l.last.IsZero() && now.Sub(l.last) < RedisDownEvery
	if !quiet {
		l.last = now
	}
	l.mu.Unlock()
	if quiet {
		return
	}
	l.logger().Warn(msg, append(args, "repeats_logged_every", RedisDownEvery.String())...)
}

// MayEvict logs a warning, when Run starts, if Redis may evict keys under memory pressure: its
// maxmemory-policy (rdb.MaxmemoryPolicy) is not noeviction. An evicted claim lets its event be sent
// again, an evicted record or queue entry loses a delivery. With noeviction a full Redis refuses writes
// instead: Dispatch and Enqueue fail with ErrNotAccepted and nothing is half-written. A policy Redis
// does not name ("") says nothing.
func (l *RedisLog) MayEvict(policy string) {
	if policy == "" || policy == "noeviction" {
		return
	}
	l.logger().Warn("webhooks: Redis may evict keys under memory pressure (maxmemory-policy "+policy+
		"): an evicted claim lets its event be sent again and an evicted record loses its delivery; set maxmemory-policy to noeviction",
		"maxmemory_policy", policy)
}
