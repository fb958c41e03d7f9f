package main

import (
	"bytes"
	"context"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/stretchr/testify/require"
)

const verdict = "22 dispatches of one event → 2 requests (1 per webhook)"

// settledGoroutines waits (bounded) for the goroutine count to fall back to at most base, and returns it.
func settledGoroutines(base int) int {
	n := runtime.NumGoroutine()
	for i := 0; i < 200 && n > base; i++ {
		time.Sleep(10 * time.Millisecond)
		n = runtime.NumGoroutine()
	}
	return n
}

func TestRunEmbedded(t *testing.T) {
	base := runtime.NumGoroutine()
	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, run(ctx, &out, ""), out.String())
	require.Contains(t, out.String(), "\n"+verdict+"\n")
	require.True(t, strings.HasSuffix(out.String(), verdict+"\n"), "the verdict is the last line:\n%s", out.String())
	require.Contains(t, out.String(), "0 fresh, 40 duplicate")
	require.Equal(t, 2, strings.Count(out.String(), "✓ verified"), out.String())
	require.LessOrEqual(t, settledGoroutines(base), base, "goroutines outlived run")
}

// TestRunExternal runs the demo as on a real Redis (-redis), on a miniredis it does not own, and checks
// that it deletes every key it wrote.
func TestRunExternal(t *testing.T) {
	mr := miniredis.RunT(t)
	base := runtime.NumGoroutine()
	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, run(ctx, &out, mr.Addr()), out.String())
	require.Contains(t, out.String(), "\n"+verdict+"\n")
	require.Contains(t, out.String(), "cleanup   deleted ")
	require.Empty(t, mr.Keys(), "the demo left keys behind")
	require.LessOrEqual(t, settledGoroutines(base), base, "goroutines outlived run")
}
