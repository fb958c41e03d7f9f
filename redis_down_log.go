package webhooks

import (
	"log/slog"
	"sync"
	"time"
)

// redisDownEvery is how often, at most, a worker that cannot reach Redis says so.
const redisDownEvery = 10 * time.Second

// redisDownLog is how a worker that cannot reach Redis says so: one warning per redisDownEvery,
// however often its passes fail, through Options.Logger or, when none is set, slog.Default(): an
// outage must not go unseen because a service set no logger. Safe for concurrent use.
type redisDownLog struct {
	log  *slog.Logger // nil: slog.Default() at the time of the warning
	mu   sync.Mutex
	last time.Time // of the last warning
}

// warn logs a failed pass of the worker, unless one was logged within redisDownEvery.
func (l *redisDownLog) warn(now time.Time, msg string, args ...any) {
	l.mu.Lock()
	quiet := !l.last.IsZero() && now.Sub(l.last) < redisDownEvery
	if !quiet {
		l.last = now
	}
	l.mu.Unlock()
	if quiet {
		return
	}
	log := l.log
	if log == nil {
		log = slog.Default()
	}
	log.Warn(msg, append(args, "repeats_logged_every", redisDownEvery.String())...)
}
