package pgxoutbox

import (
	"context"
	"sync"
	"time"
)

// waker wakes every waiting pass of one Run at once: wait returns a channel that the next wake
// closes. Its zero value is not ready: use newWaker.
type waker struct {
	mu sync.Mutex
	ch chan struct{}
}

func newWaker() *waker { return &waker{ch: make(chan struct{})} }

// wait returns the channel the next wake closes. Take it before a pass, so a notification that
// arrives during the pass ends the wait after it at once.
func (w *waker) wait() <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.ch
}

// wake ends every wait taken before it.
func (w *waker) wake() {
	w.mu.Lock()
	close(w.ch)
	w.ch = make(chan struct{})
	w.mu.Unlock()
}

// listen keeps a connection LISTENing on the table's channel until ctx ends, waking w at each
// notification, and once after each (re)connection, for the notifications it missed. The connection
// is taken out of the pool (Hijack), so its LISTEN never reaches another user of the pool, and closed
// when listen ends. While PostgreSQL is down it retries with backoff; the passes poll meanwhile.
func (o *Outbox) listen(ctx context.Context, w *waker) {
	bo := backoff{max: o.opts.MaxBackoff}
	for ctx.Err() == nil {
		err := o.listenOnce(ctx, w, &bo)
		if ctx.Err() != nil {
			return
		}
		wait := bo.next()
		o.opts.Logger.Warn("pgxoutbox: listen failed; retrying", "table", o.opts.Table, "error", err, "retry_in", wait)
		sleep(ctx, wait)
	}
}

// listenOnce LISTENs on one connection until it fails or ctx ends.
func (o *Outbox) listenOnce(ctx context.Context, w *waker, bo *backoff) error {
	pc, err := o.pool.Acquire(ctx)
	if err != nil {
		return sqlError("listen", err)
	}
	conn := pc.Hijack()
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		defer cancel()
		_ = conn.Close(cctx)
	}()
	if _, err := conn.Exec(ctx, o.sql.listen); err != nil {
		return sqlError("listen", err)
	}
	bo.reset()
	w.wake()
	for {
		if _, err := conn.WaitForNotification(ctx); err != nil {
			return sqlError("listen", err)
		}
		w.wake()
	}
}
