package worker

import (
	"fmt"
	"strconv"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLocalDue: the local hint hands out each id once, in the order added, when due; gives back what
// was not leased ahead of the rest; drops ids a scan's read leased; holds no more than its bound.
func TestLocalDue(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		run  func(t *testing.T, l *LocalDue)
	}{
		{"due in order, each once", func(t *testing.T, l *LocalDue) {
			for i := range 5 {
				require.True(t, l.Add(1, "wh_a", "d"+strconv.Itoa(i), 100, 100))
			}
			require.True(t, l.Add(1, "wh_a", "d0", 100, 100), "an id held already")
			due, _ := l.Due(100)
			assert.Equal(t, []Queue{{Shard: 1, Webhook: "wh_a"}}, due)
			assert.Equal(t, 5, l.Takeable(anyRoom))
			assert.Equal(t, []string{"d0", "d1"}, l.Take(1, "wh_a", 2))
			assert.Equal(t, []string{"d2", "d3", "d4"}, l.Take(1, "wh_a", 9))
			assert.Empty(t, l.Take(1, "wh_a", 9))
			due, next := l.Due(100)
			assert.Empty(t, due)
			assert.Zero(t, next)
		}},
		{"later ids come due at their time", func(t *testing.T, l *LocalDue) {
			require.True(t, l.Add(2, "wh_a", "late", 300, 100))
			require.True(t, l.Add(2, "wh_b", "soon", 200, 100))
			due, next := l.Due(100)
			assert.Empty(t, due)
			assert.EqualValues(t, 200, next)
			due, next = l.Due(250)
			assert.Equal(t, []Queue{{Shard: 2, Webhook: "wh_b"}}, due)
			assert.EqualValues(t, 300, next)
			assert.Equal(t, []string{"soon"}, l.Take(2, "wh_b", 1))
			due, _ = l.Due(300)
			assert.Equal(t, []Queue{{Shard: 2, Webhook: "wh_a"}}, due)
		}},
		{"given back ahead of the rest", func(t *testing.T, l *LocalDue) {
			for i := range 4 {
				l.Add(0, "wh_a", "d"+strconv.Itoa(i), 1, 1)
			}
			got := l.Take(0, "wh_a", 3)
			l.PutBack(0, "wh_a", got[1:], 0)
			l.Due(1)
			assert.Equal(t, []string{"d1", "d2", "d3"}, l.Take(0, "wh_a", 9))
		}},
		{"leased by a read: forgotten", func(t *testing.T, l *LocalDue) {
			for i := range 3 {
				l.Add(0, "wh_a", "d"+strconv.Itoa(i), 1, 1)
			}
			l.Forget(0, "wh_a", []string{"d0", "d2", "other"})
			assert.Equal(t, 1, l.Takeable(anyRoom))
			assert.Equal(t, []string{"d1"}, l.Take(0, "wh_a", 9))
		}},
		{"bounded", func(t *testing.T, l *LocalDue) {
			for i := range 8 {
				require.True(t, l.Add(0, "wh_a", "d"+strconv.Itoa(i), 1, 1))
			}
			assert.False(t, l.Add(0, "wh_a", "d8", 1, 1), "full")
			l.Take(0, "wh_a", 1)
			assert.True(t, l.Add(0, "wh_a", "d8", 1, 1), "room again")
		}},
		{"a queue with due ids is read every LocalReadEvery", func(t *testing.T, l *LocalDue) {
			k := Queue{Shard: 0, Webhook: "wh_a"}
			assert.False(t, l.Serves(k, 1000), "no ids: read it (at 1000)")
			l.Add(0, "wh_a", "d0", 1, 1)
			assert.True(t, l.Serves(k, 1000+LocalReadEvery-1), "read lately: the hint serves")
			assert.False(t, l.Serves(k, 1000+LocalReadEvery), "read it again")
			assert.True(t, l.Serves(k, 1000+LocalReadEvery+1), "read lately")
		}},
		{"takeable within each webhook's room", func(t *testing.T, l *LocalDue) {
			for i := range 3 {
				l.Add(i, "wh_a", "a"+strconv.Itoa(i), 1, 1)
				l.Add(i, "wh_b", "b"+strconv.Itoa(i), 1, 1)
			}
			l.Due(1)
			room := map[string]int{"wh_a": 2, "wh_b": 0}
			assert.Equal(t, 2, l.Takeable(func(id string) int { return room[id] }))
		}},
		{"a parked webhook's ids wait until it may be taken", func(t *testing.T, l *LocalDue) {
			l.Add(0, "wh_a", "d0", 1, 1)
			l.Add(0, "wh_a", "d1", 1, 1)
			l.Delay(0, "wh_a", 500)
			due, next := l.Due(100)
			assert.Empty(t, due)
			assert.EqualValues(t, 500, next)
			assert.Zero(t, l.Takeable(anyRoom))
			l.Due(500)
			assert.Equal(t, []string{"d0", "d1"}, l.Take(0, "wh_a", 9))
		}},
		{"cleared", func(t *testing.T, l *LocalDue) {
			l.Add(0, "wh_a", "d0", 1, 1)
			l.Add(0, "wh_a", "d1", 9, 1)
			l.Clear()
			due, next := l.Due(100)
			assert.Empty(t, due)
			assert.Zero(t, next)
			assert.Zero(t, l.Takeable(anyRoom))
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.run(t, NewLocalDue(8))
		})
	}
}

// TestLocalDueConcurrent: ids added and taken from many goroutines are each handed out once.
func TestLocalDueConcurrent(t *testing.T) {
	t.Parallel()
	l := NewLocalDue(1 << 20)
	const adders, each = 8, 500
	var mu sync.Mutex
	seen := map[string]int{}
	var wg sync.WaitGroup
	for a := range adders {
		wg.Go(func() {
			for i := range each {
				l.Add(i%4, "wh_"+strconv.Itoa(i%3), fmt.Sprintf("d%d-%d", a, i), 0, 0)
			}
		})
		wg.Go(func() {
			for range 4 * each {
				due, _ := l.Due(0)
				for _, w := range due {
					for _, id := range l.Take(w.Shard, w.Webhook, 3) {
						mu.Lock()
						seen[id]++
						mu.Unlock()
					}
				}
			}
		})
	}
	wg.Wait()
	due, _ := l.Due(0)
	for _, w := range due {
		for _, id := range l.Take(w.Shard, w.Webhook, adders*each) {
			seen[id]++
		}
	}
	require.Len(t, seen, adders*each)
	for id, n := range seen {
		require.Equal(t, 1, n, "id %s handed out", id)
	}
}

// anyRoom is a webhook's room when none is at its in-flight limit.
func anyRoom(string) int { return 1 << 30 }

// TestLocalDueWith: the queues the hint holds due ids of join the webhooks a scan found due; one found
// by both is served by the hint (its queue not read) only while it was read less than LocalReadEvery
// ago.
func TestLocalDueWith(t *testing.T) {
	t.Parallel()
	l := NewLocalDue(16)
	require.True(t, l.Add(1, "wh_a", "d1", 100, 100))
	require.True(t, l.Add(2, "wh_b", "d2", 100, 100))
	local, _ := l.Due(100)
	scanned := []Due{{Shard: 1, ID: "wh_a"}, {Shard: 3, ID: "wh_c"}}
	got := l.With(100, scanned, local)
	assert.ElementsMatch(t, []Due{{Shard: 1, ID: "wh_a"}, {Shard: 3, ID: "wh_c"}, {Shard: 2, ID: "wh_b", Local: true}}, got,
		"wh_a's queue is read (never read before), wh_b's only in the hint")
	local, _ = l.Due(150)
	got = l.With(150, []Due{{Shard: 1, ID: "wh_a"}}, local)
	assert.Contains(t, got, Due{Shard: 1, ID: "wh_a", Local: true}, "read 50ms ago: the hint serves it")
	assert.Equal(t, []Due{{Shard: 3, ID: "wh_c"}}, l.With(150, []Due{{Shard: 3, ID: "wh_c"}}, nil), "nothing local: as scanned")
}
