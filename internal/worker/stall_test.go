package worker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTimedReadFailsALateAnswer(t *testing.T) {
	t.Parallel()
	refused := errors.New("refused")
	for _, tc := range []struct {
		name  string
		sleep time.Duration
		err   error
		want  error
	}{
		{"prompt", 0, nil, nil},
		{"failed", 0, refused, refused},
		{"late", StallLimit + 50*time.Millisecond, nil, ErrStalled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := timedRead("the schedules", func() error { time.Sleep(tc.sleep); return tc.err })
			if tc.want == nil {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, tc.want)
			if tc.want == ErrStalled {
				assert.Contains(t, err.Error(), "the worker's read of the schedules")
			}
		})
	}
}

// TestRunWaitsTheGraceAfterAStalledPass: a pass that Redis answered late leases nothing, and Run treats
// it as a failed pass: it asks Redis whether it answers, then waits OutageGrace before the next lease.
func TestRunWaitsTheGraceAfterAStalledPass(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var outage Outage
	var leases atomic.Int32
	var second atomic.Int64 // when the second pass began (UnixNano)
	pinged := make(chan time.Time, 1)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	done := make(chan struct{})
	go func() {
		defer close(done)
		New(Config{Log: log, Now: time.Now, Shards: func() int { return 1 }, Wake: NewWake(), RedisLog: NewRedisLog(log),
			Outage: &outage, Free: func() int { return 1 },
			Ping: func(context.Context) error {
				select {
				case pinged <- time.Now():
				default:
				}
				return nil
			},
			WritePending: func(context.Context) {},
			Lease: func(context.Context, int, ScanMode) (int, time.Time, bool, error) {
				if leases.Add(1) == 1 {
					return 0, time.Time{}, false, fmt.Errorf("webhooks: read schedules: %w", ErrStalled)
				}
				second.Store(time.Now().UnixNano())
				cancel()
				return 0, time.Time{}, false, nil
			},
			Failed: func(error) bool { return false }, // a stall is no transport error
		}).Run(ctx)
	}()
	var at time.Time
	select {
	case at = <-pinged:
	case <-done:
		t.Fatal("Run ended without asking whether Redis answers")
	}
	<-done
	require.Equal(t, int32(2), leases.Load())
	assert.GreaterOrEqual(t, time.Unix(0, second.Load()).Sub(at), OutageGrace, "the next pass came within the grace")
}
