package breaker

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/smartdrop/webhooks/internal/rdb"
	"github.com/smartdrop/webhooks/internal/types"

	"github.com/stretchr/testify/require"
)

// interleaving is one simulated process's attempts to one webhook: it sends them in order, at most
// inFlight at once, and their answers come back in a random order; the receiver decides each in send
// order (fails(i)); an answer overtakes at most reorder-1 older ones. The clock moves 0 to 2ms per step, so stamps tie often. Each count travels to Redis
// for 0 to delay steps (a slow goroutine, a busy lane): counts reach Redis in another order than the
// answers came. The process counts as the Dispatcher does: a success's ticket closes once its count is
// applied (Sends.Counted), a failure goes through Sends.Hold, and what they release is counted then.
type interleaving struct {
	t        *testing.T
	b        *Breaker
	rng      *rand.Rand
	now      *time.Time
	fails    func(i int) bool
	inFlight int
	reorder  int // an answer comes for one of the reorder oldest attempts open
	delay    int // a count lands 0 to delay steps after it is sent

	sent      int                   // attempts sent so far
	open      map[int]Ticket        // sent, not answered
	transit   []transitCount        // counts on their way to Redis
	opened    int                   // EventOpened seen
	sentAtOne int                   // attempts sent when the circuit first opened (-1: not yet)
	readyAt   int                   // attempts sent when breakAfter failures were answered with every attempt sent by the last of their answers answered (-1: not yet)
	answers   []int64               // answer stamps, in answer order
	sentMs    map[int]int64         // attempt -> its send stamp
	failures  map[int]struct{}      // attempts answered as failures
	counted   map[string]struct{}   // outcomes applied, to see none lost or doubled
	tickets   map[Ticket]int        // ticket -> attempt, for the log
	history   []string              // what happened, for a failure's message
	onApplied func(ev Event, i int) // optional check after each count
}

// transitCount is a count sent but not yet applied: it lands after delay more steps.
type transitCount struct {
	outs    []Outcome
	attempt []int
	delay   int
}

func (s *interleaving) step() {
	*s.now = s.now.Add(time.Duration(s.rng.IntN(3)) * time.Millisecond)
}

// run plays n attempts and lands every count.
func (s *interleaving) run(n int) {
	s.open, s.failures, s.counted, s.tickets, s.sentAtOne, s.readyAt = map[int]Ticket{}, map[int]struct{}{}, map[string]struct{}{}, map[Ticket]int{}, -1, -1
	s.sentMs = map[int]int64{}
	for s.sent < n || len(s.open) > 0 || len(s.transit) > 0 {
		s.step()
		s.land()
		s.checkReady()
		switch {
		case s.sent < n && len(s.open) < s.inFlight && (len(s.open) == 0 || s.rng.IntN(2) == 0):
			tk := s.b.Sends().Start("wh", *s.now)
			s.open[s.sent], s.tickets[tk], s.sentMs[s.sent] = tk, s.sent, tk.Sent.UnixMilli()
			s.history = append(s.history, fmt.Sprintf("send %d@%d", s.sent, tk.Sent.UnixMilli()%100000))
			s.sent++
		case len(s.open) > 0:
			keys := make([]int, 0, len(s.open))
			for i := range s.open {
				keys = append(keys, i)
			}
			slices.Sort(keys)
			i := keys[s.rng.IntN(min(len(keys), s.reorder))] // one of the oldest open: answers overtake a few others
			tk := s.open[i]
			delete(s.open, i)
			s.answer(i, tk)
		}
	}
}

// answer counts attempt i's outcome as the Dispatcher does.
func (s *interleaving) answer(i int, tk Ticket) {
	kind := rdb.CountSuccess
	if s.fails(i) {
		kind = rdb.CountFailure
		s.failures[i] = struct{}{}
	}
	o := Outcome{WebhookID: "wh", Kind: kind, Answered: *s.now, Sent: tk.Sent, Ticket: tk}
	if kind == rdb.CountFailure {
		s.answers = append(s.answers, max(s.now.UnixMilli(), tk.Sent.UnixMilli()))
	}
	s.history = append(s.history, fmt.Sprintf("answer %d %s@%d", i, kind, s.now.UnixMilli()%100000))
	if kind == rdb.CountSuccess {
		s.send([]Outcome{o})
		return
	}
	held, released := s.b.Sends().Hold(tk, &o, nil)
	outs := []Outcome{}
	if !held {
		outs = append(outs, o)
	} else {
		s.history = append(s.history, fmt.Sprintf("hold %d", i))
	}
	for _, h := range released {
		outs = append(outs, h.Outcome)
	}
	s.send(outs)
}

// checkReady notes when the circuit is due to open (all-failing runs): BreakAfter failures answered,
// and every attempt sent at or before the last of their answers answered.
func (s *interleaving) checkReady() {
	k := s.b.breakAfter
	if s.readyAt >= 0 || len(s.answers) < k {
		return
	}
	last := s.answers[k-1]
	for i := range s.open {
		if s.sentMs[i] <= last {
			return
		}
	}
	s.readyAt = s.sent
}

// send puts a count on its way.
func (s *interleaving) send(outs []Outcome) {
	if len(outs) == 0 {
		return
	}
	idx := make([]int, len(outs))
	for j, o := range outs {
		idx[j] = s.tickets[o.Ticket]
	}
	s.transit = append(s.transit, transitCount{outs: outs, attempt: idx, delay: s.rng.IntN(s.delay + 1)})
}

// land applies the counts whose delay is over, in the order they were sent among those landing now
// (a lane applies in order), and what their successes release.
func (s *interleaving) land() {
	var landing []transitCount
	kept := s.transit[:0]
	for _, c := range s.transit {
		if c.delay == 0 {
			landing = append(landing, c)
			continue
		}
		c.delay--
		kept = append(kept, c)
	}
	s.transit = kept
	s.rng.Shuffle(len(landing), func(a, b int) { landing[a], landing[b] = landing[b], landing[a] }) // lanes race
	for _, c := range landing {
		keys, args := s.b.CountArgs(*s.now, c.outs)
		events, err := s.b.Counted(rdb.Count.Run(context.Background(), s.b.store.rdb, keys, args...), *s.now, c.outs)
		require.NoError(s.t, err)
		for j, ev := range events {
			key := fmt.Sprint(c.attempt[j])
			require.NotContains(s.t, s.counted, key, "attempt %d counted once", c.attempt[j])
			s.counted[key] = struct{}{}
			s.history = append(s.history, fmt.Sprintf("count %d %s -> %d failures, opened %v", c.attempt[j], c.outs[j].Kind,
				ev.Health.ConsecutiveFailures, ev.Opened))
			if ev.Opened {
				s.opened++
				if s.sentAtOne < 0 {
					s.sentAtOne = s.sent
				}
			}
			if s.onApplied != nil {
				s.onApplied(ev, c.attempt[j])
			}
		}
		var released []Outcome
		for _, h := range s.b.Sends().Counted(c.outs) {
			released = append(released, h.Outcome)
		}
		s.send(released)
	}
}

// propertySeeds is how many interleavings a property test plays: long with WEBHOOKS_LONG_TESTS (CI).
func propertySeeds(short, long uint64) uint64 {
	if v := os.Getenv("WEBHOOKS_LONG_TESTS"); v != "" && v != "0" {
		return long
	}
	return short
}

// propertyBreaker is a Breaker on tr, under a key prefix of its own, whose clock the test sets.
func propertyBreaker(tr *testRedis, seed uint64, breakAfter int) (*Breaker, *time.Time) {
	now := circuitT0
	b := New(Config{Client: tr.rdb, Keys: rdb.KeysOf(fmt.Sprintf("%s_%d", tr.prefix, seed), 1), BreakAfter: breakAfter,
		BreakFor: 30 * time.Second, ProbeHold: 5 * time.Second, Now: func() time.Time { return now }})
	b.store.registered(context.Background(), Outcome{WebhookID: "wh"}) // count.lua keeps no circuit of an unknown webhook
	return b, &now
}

// TestSendsPropertyNeverOpensWithoutBreakAfterInARow (DESIGN guarantee 4): random interleavings of one
// process's sends and answers (up to 16 in flight, answers in any order, counts reaching Redis in
// another order again, stamps tying within a millisecond) to a receiver that never fails twice in a
// row in the order the attempts were sent never open the circuit, whatever BreakAfter >= 2; every
// attempt is counted exactly once. 300 interleavings of 200 attempts each with WEBHOOKS_LONG_TESTS
// (CI), 15 otherwise.
func TestSendsPropertyNeverOpensWithoutBreakAfterInARow(t *testing.T) {
	t.Parallel()
	tr := newTestRedis(t)
	for seed := range propertySeeds(15, 300) {
		rng := rand.New(rand.NewPCG(seed, 46))
		breakAfter := 2 + rng.IntN(4)
		b, now := propertyBreaker(tr, seed, breakAfter)
		pattern := make([]bool, 200) // failures never adjacent in send order
		for i := range pattern {
			pattern[i] = (i == 0 || !pattern[i-1]) && rng.IntN(2) == 0
		}
		s := &interleaving{t: t, b: b, rng: rng, now: now, fails: func(i int) bool { return pattern[i] }, inFlight: 1 + rng.IntN(16)}
		s.reorder, s.delay = 1+rng.IntN(s.inFlight), 3
		s.run(len(pattern))
		if s.opened > 0 {
			t.Fatalf("seed %d, BreakAfter %d, in flight %d: opened %d times; history:\n%v", seed, breakAfter, s.inFlight, s.opened, s.history)
		}
		require.Len(t, s.counted, len(pattern), "seed %d: every attempt counted once", seed)
		hs, err := b.Read(context.Background(), *now, "wh")
		require.NoError(t, err)
		require.Equal(t, types.CircuitClosed, hs["wh"].State, "seed %d", seed)
	}
}

// TestSendsPropertyOpensOnAllFailing: the same interleavings (counts landing at once, answers
// overtaking up to 3 others) to a receiver failing everything open the circuit once, as soon as
// BreakAfter failures are answered and every attempt sent by the last of their answers is answered
// (the attempts in flight then: what a failure's count waits for), and hold no failure back for good:
// every attempt is counted, and the circuit's count is every failure. 100 interleavings with
// WEBHOOKS_LONG_TESTS (CI), 10 otherwise.
func TestSendsPropertyOpensOnAllFailing(t *testing.T) {
	t.Parallel()
	tr := newTestRedis(t)
	for seed := range propertySeeds(10, 100) {
		rng := rand.New(rand.NewPCG(seed, 47))
		breakAfter := 2 + rng.IntN(4)
		b, now := propertyBreaker(tr, seed, breakAfter)
		s := &interleaving{t: t, b: b, rng: rng, now: now, fails: func(int) bool { return true }, inFlight: 1 + rng.IntN(16)}
		s.reorder = 1 + rng.IntN(min(s.inFlight, 4))
		const n = 60
		s.run(n)
		require.Equal(t, 1, s.opened, "seed %d: opened once; history:\n%v", seed, s.history)
		require.GreaterOrEqual(t, s.readyAt, 0, "seed %d", seed)
		require.LessOrEqual(t, s.sentAtOne, s.readyAt, "seed %d: opened as soon as BreakAfter failures were answered with nothing sent before their answers still out; history:\n%v", seed, s.history)
		require.Len(t, s.counted, n, "seed %d: every attempt counted once", seed)
		hs, err := b.Read(context.Background(), *now, "wh")
		require.NoError(t, err)
		require.Equal(t, n, hs["wh"].ConsecutiveFailures, "seed %d: every failure in the run", seed)
	}
}
