package worker

import (
	"context"
	"time"
)

// Wake is how a Dispatcher wakes its sleeping worker (Enqueue, an ending attempt): a poke that waits for
// the next sleep when none is going on. Safe for concurrent use.
type Wake struct {
	c chan struct{}
}

// NewWake is a Wake with no poke waiting.
func NewWake() *Wake { return &Wake{c: make(chan struct{}, 1)} }

// Poke wakes a sleeping worker, or the next one to sleep.
func (w *Wake) Poke() {
	select {
	case w.c <- struct{}{}:
	default:
	}
}

// Sleep waits for wait, the context's end or a poke, whichever comes first, and reports whether a
// poke (or the context's end) cut it short.
func (w *Wake) Sleep(ctx context.Context, wait time.Duration) bool {
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
		return false
	case <-w.c:
	}
	return true
}

// Wait waits for a poke or the context's end.
func (w *Wake) Wait(ctx context.Context) {
	select {
	case <-ctx.Done():
	case <-w.c:
	}
}
