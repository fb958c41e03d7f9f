package pgxoutbox

import (
	"context"
	"math/rand/v2"
	"time"
)

// minBackoff is the first wait of a backoff.
const minBackoff = 100 * time.Millisecond

// backoff is the wait between attempts while something fails: 100ms, doubling up to max, each spread
// by ±25% so that replicas do not retry in step. max must be set.
type backoff struct {
	max  time.Duration
	last time.Duration
}

// next is the wait before the next attempt.
func (b *backoff) next() time.Duration {
	b.last = min(max(minBackoff, 2*b.last), b.max)
	return time.Duration(float64(b.last) * (0.75 + rand.Float64()/2))
}

// reset starts the next run of failures at minBackoff.
func (b *backoff) reset() { b.last = 0 }

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
