package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
)

// EventType is the type of every event of the workload.
const EventType = "pool.created"

// EventData is the event's data, padded so that it encodes to the -payload size.
type EventData struct {
	PoolID string `json:"pool_id"`
	Owner  string `json:"owner"`
	Region string `json:"region"`
	Note   string `json:"note"`
}

// NewEventData is the data of every event: size bytes of JSON.
func NewEventData(size int) EventData {
	d := EventData{PoolID: "pool_0000000042", Owner: "acct_7f3a9c", Region: "eu-west-1"}
	b, _ := json.Marshal(d)
	if pad := size - len(b); pad > 0 {
		d.Note = strings.Repeat("x", pad)
	}
	return d
}

// EventID is the i-th event id of a phase: 29 bytes with the phase's 13-byte prefix, as long as a
// Stripe event id.
func EventID(idPrefix string, i int) string { return fmt.Sprintf("%s%016d", idPrefix, i) }

// Parallel runs fn(i) for i in [0, n) from workers goroutines, until done or ctx ends. It returns the
// number of calls that failed and the first error.
func Parallel(ctx context.Context, n, workers int, done *atomic.Int64, fn func(ctx context.Context, i int) error) (int, error) {
	var next atomic.Int64
	var failed atomic.Int64
	var first error
	var once sync.Once
	var wg sync.WaitGroup
	for range min(workers, n) {
		wg.Go(func() {
			for ctx.Err() == nil {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				if err := fn(ctx, i); err != nil {
					failed.Add(1)
					once.Do(func() { first = err })
				}
				if done != nil {
					done.Add(1)
				}
			}
		})
	}
	wg.Wait()
	if ctx.Err() != nil && first == nil {
		first = ctx.Err()
	}
	return int(failed.Load()), first
}
