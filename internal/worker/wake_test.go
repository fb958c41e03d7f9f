package worker

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestWake: a poke cuts the next sleep short, even one that begins after it, and is used up by it;
// a sleep with no poke lasts its wait; Wait returns on a poke or the context's end.
func TestWake(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := NewWake()
	assert.False(t, w.Sleep(ctx, time.Millisecond), "no poke: the wait runs out")
	w.Poke()
	w.Poke() // pokes do not pile up
	assert.True(t, w.Sleep(ctx, time.Minute), "a poke made before the sleep cuts it short")
	assert.False(t, w.Sleep(ctx, time.Millisecond), "the poke was used up")
	w.Poke()
	w.Wait(ctx)
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	w.Wait(cctx)
	assert.True(t, w.Sleep(cctx, time.Minute), "the context's end cuts a sleep short")
}
