package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestChecks: each assertion of the soak fails on the figures that break it, and passes on clean ones.
func TestChecks(t *testing.T) {
	t.Parallel()
	const pairs = 1000
	clean := func() (*sweepResult, drainResult) {
		return &sweepResult{states: map[recordState]int{recordSuccess: pairs}, delivered: pairs}, drainResult{drained: true, after: 2 * time.Second}
	}
	tests := []struct {
		name    string
		breakIt func(r *sweepResult, dr *drainResult, s *soak)
		want    string // "" for a pass
	}{
		{"clean", func(*sweepResult, *drainResult, *soak) {}, ""},
		{"not delivered", func(r *sweepResult, _ *drainResult, _ *soak) { r.undone, r.delivered = 3, pairs-3 }, "neither delivered nor failed"},
		{"stranded", func(r *sweepResult, _ *drainResult, _ *soak) { r.states[recordPending] = 1 }, "stranded pending"},
		{"missing", func(r *sweepResult, _ *drainResult, _ *soak) { r.states[recordMissing] = 1 }, "no readable record"},
		{"slow drain", func(_ *sweepResult, dr *drainResult, _ *soak) { dr.after = 61 * time.Second }, "not drained within"},
		{"no drain", func(_ *sweepResult, dr *drainResult, _ *soak) { dr.drained, dr.left = false, 4 }, "4 pairs not final"},
		{"duplicates", func(r *sweepResult, _ *drainResult, _ *soak) { r.extra2xx = 4 }, "duplicate 2xx"},
		{"duplicates at the bound", func(r *sweepResult, _ *drainResult, _ *soak) { r.extra2xx = 3 }, ""},
		{"success without 2xx", func(r *sweepResult, _ *drainResult, _ *soak) { r.lies = 1 }, "never answered 2xx"},
		{"bad signature", func(_ *sweepResult, _ *drainResult, s *soak) { s.recv.badSignature.Add(1) }, "bad signature"},
		{"flaky circuit opened", func(_ *sweepResult, _ *drainResult, s *soak) {
			s.watch.hookReport("circuit-opened", "wh_flaky", time.Now())
		}, "flaky webhook's circuit opened 1 times without 5 failures in a row"},
		{"healthy circuit seen open by a poll", func(_ *sweepResult, _ *drainResult, s *soak) {
			s.watch.events[0] = append(s.watch.events[0], circuitEvent{at: time.Now(), kind: "polled-open"})
		}, "healthy webhook's circuit opened 1 times"},
		{"flaky circuit opened after a run of 5", func(_ *sweepResult, _ *drainResult, s *soak) {
			for range 5 {
				s.recv.countRun(1, true)
			}
			s.watch.hookReport("circuit-opened", "wh_flaky", time.Now())
		}, ""},
		{"kills missing", func(_ *sweepResult, _ *drainResult, s *soak) { s.redis.restarts = 1 }, "Redis kills happened"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			recv := testReceiver(t)
			s := &soak{cfg: config{breakAfter: 6, drainBound: time.Minute, maxDupRatio: 0.003, producerKills: 2, redisKills: 2},
				pairs: make([]pair, pairs), recv: recv, watch: newCircuitWatch([]string{"wh_healthy", "wh_flaky", "wh_hanging"}),
				redis: &redisServer{restarts: 2}}
			r, dr := clean()
			tt.breakIt(r, &dr, s)
			err := s.checks(r, dr, 2)
			if tt.want == "" {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}

// TestReceiverCounts: the receiver counts 2xx per pair and the longest run of failures in arrival order.
func TestReceiverCounts(t *testing.T) {
	t.Parallel()
	recv := testReceiver(t)
	for _, fails := range []bool{true, true, false, true, true, true, false, true} {
		recv.countRun(1, fails)
	}
	assert.Equal(t, 3, recv.longestRun(1))
	assert.Equal(t, 0, recv.longestRun(0))
	want := []pair{{0, "a"}, {1, "a"}, {2, "b"}}
	recv.ok[pair{0, "a"}] = 2
	recv.ok[pair{9, "zz"}] = 1
	assert.Equal(t, []pair{{1, "a"}, {2, "b"}}, recv.unseen(want))
	assert.Equal(t, 1, recv.strangers(want))
	assert.Equal(t, 2, recv.okCount(pair{0, "a"}))
}

// TestLineWriter: a child's stdout is cut into whole lines, however the writes split them.
func TestLineWriter(t *testing.T) {
	t.Parallel()
	var got []string
	w := &lineWriter{emit: func(l string) { got = append(got, l) }}
	for _, chunk := range []string{"progress 1", "00\ndone 5", "000 3\n", "circuit-opened wh_1 17\nerr"} {
		_, err := w.Write([]byte(chunk))
		require.NoError(t, err)
	}
	assert.Equal(t, []string{"progress 100", "done 5000 3", "circuit-opened wh_1 17"}, got)
}

// TestAssess: an opening counts as unexplained unless a long run of failures came shortly before it;
// a probe's reopening shares the first opening's explanation; a poll does not count an opening twice.
func TestAssess(t *testing.T) {
	t.Parallel()
	t0 := time.Unix(1_000_000, 0)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	ev := func(s float64, kind string) circuitEvent { return circuitEvent{at: at(s), kind: kind} }
	const window = 3 * time.Second
	tests := []struct {
		name     string
		events   []circuitEvent
		longRuns []time.Time
		want     openings
	}{
		{"none", nil, nil, openings{}},
		{"opened without a run", []circuitEvent{ev(10, "circuit-opened")}, nil, openings{hooks: 1, unexplained: 1}},
		{"opened after a run", []circuitEvent{ev(10, "circuit-opened")}, []time.Time{at(8)}, openings{hooks: 1}},
		{"opened long after a run", []circuitEvent{ev(10, "circuit-opened")}, []time.Time{at(2)}, openings{hooks: 1, unexplained: 1}},
		{"opened before the run", []circuitEvent{ev(10, "circuit-opened")}, []time.Time{at(11)}, openings{hooks: 1, unexplained: 1}},
		{"reopened by a failed probe", []circuitEvent{ev(10, "circuit-opened"), ev(40, "circuit-opened")}, []time.Time{at(9)}, openings{hooks: 2}},
		{"closed, then opened again", []circuitEvent{ev(10, "circuit-opened"), ev(11, "circuit-closed"), ev(12, "circuit-opened")},
			[]time.Time{at(9.5)}, openings{hooks: 2}},
		{"closed, then opened again without a run", []circuitEvent{ev(10, "circuit-opened"), ev(20, "circuit-closed"), ev(30, "circuit-opened")},
			[]time.Time{at(9.5)}, openings{hooks: 2, unexplained: 1}},
		{"a poll sees a reported opening", []circuitEvent{ev(10, "circuit-opened"), ev(10.2, "polled-open")}, []time.Time{at(9)}, openings{hooks: 1}},
		{"a poll sees it before the hook reports it", []circuitEvent{ev(10.2, "polled-open"), ev(10.3, "circuit-opened"), ev(11, "circuit-closed")},
			nil, openings{hooks: 1, unexplained: 1}},
		{"only a poll sees it", []circuitEvent{ev(10, "polled-open")}, nil, openings{polled: 1, unexplained: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			w := newCircuitWatch([]string{"wh"})
			w.events[0] = tt.events
			assert.Equal(t, tt.want, w.assess(0, tt.longRuns, window))
		})
	}
}

// TestDupCauses: an extra 2xx after a producer kill is explained when the pair's 2xx before it was
// answered to that producer just before the kill, or just before a Redis kill that the producer
// outlived by less than keptWindow once Redis answered again (the outcome it kept through the outage,
// lost); not otherwise.
func TestDupCauses(t *testing.T) {
	t.Parallel()
	t0 := time.Now()
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	redisKill := kill{at: at(14_253), kind: killRedis, producer: -1, back: at(16_900)}
	tests := []struct {
		name        string
		kills       []kill
		previous    answer // the pair's 2xx before the extra one, answered at 18.131 s
		unexplained int
	}{
		{"answered just before its producer's kill", []kill{{at: at(10_000), kind: killProducer, producer: 1}},
			answer{at: at(9_900), producer: 1}, 0},
		{"answered just before another producer's kill", []kill{{at: at(10_000), kind: killProducer, producer: 2}},
			answer{at: at(9_900), producer: 1}, 1},
		{"kept through a Redis outage, its producer killed once Redis answered", []kill{redisKill, {at: at(17_875), kind: killProducer, producer: 1}},
			answer{at: at(14_246), producer: 1}, 0},
		{"kept through a Redis outage, its producer killed over a Timeout after Redis answered", []kill{redisKill, {at: at(17_950), kind: killProducer, producer: 1}},
			answer{at: at(14_246), producer: 1}, 1},
		{"kept through a Redis outage, another producer killed", []kill{redisKill, {at: at(17_875), kind: killProducer, producer: 2}},
			answer{at: at(14_246), producer: 1}, 1},
		{"answered long before the Redis kill", []kill{redisKill, {at: at(17_875), kind: killProducer, producer: 1}},
			answer{at: at(13_000), producer: 1}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			recv := testReceiver(t)
			recv.dups = []dup{{at: at(18_131), producer: 1, previous: tt.previous}}
			s := &soak{cfg: config{timeout: time.Second}, recv: recv, kills: tt.kills}
			dc := s.dupCauses(10 * time.Second)
			assert.Equal(t, 1, dc.byCause[killProducer])
			assert.Equal(t, tt.unexplained, dc.unexplainedByProducerKill)
		})
	}
}

// testReceiver is a started receiver (hanging requests 1s, BreakAfter 5), closed with the test.
func testReceiver(t *testing.T) *receiver {
	t.Helper()
	recv, err := startReceiver(time.Second, 5)
	require.NoError(t, err)
	t.Cleanup(recv.close)
	return recv
}
