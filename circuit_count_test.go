package webhooks

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/smartdrop/webhooks/internal/breaker"
	"github.com/smartdrop/webhooks/internal/rdb"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCircuitCountIsExactlyConsecutive: outcomes counted from many goroutines on three clients at once,
// with answer times up to 50ms apart from the order they reach Redis in (as late outcomes, slow
// goroutines and replicas make them) and send times up to 20ms before their answers, give exactly the
// rule (docs/delivery.md: a success drops the failures sent at or before its answer; a failure counts
// only if sent after the newest success's answer). Each count runs in a MULTI with an INCR of a key in
// the circuits' slot, so the test learns the order Redis ran them in, replays it on a model of the rule
// (countModel) and checks every reply against it.
func TestCircuitCountIsExactlyConsecutive(t *testing.T) {
	t.Parallel()
	const breakAfter, clients, perClient, each = 3, 3, 5, 60
	ctx := context.Background()
	tr := newTestRedis(t)
	keys := newKeyspace(tr.prefix)
	registerIDs(t, tr, keys, "wh_1")
	seqKey := keys.RegistryTag() + ":test-seq" // same slot as the circuits
	type applied struct {
		seq            int64
		kind           string
		sent, answered int64
		ev             breaker.Event
	}
	var mu sync.Mutex
	var log []applied
	type sender struct {
		client redis.UniversalClient
		b      *breaker.Breaker
		rng    *rand.Rand
	}
	var senders []sender
	for c := range clients {
		client := tr.newClient(t)
		b := breaker.New(breaker.Config{Client: client, Keys: keys, BreakAfter: breakAfter, BreakFor: time.Minute})
		for g := range perClient {
			senders = append(senders, sender{client, b, rand.New(rand.NewPCG(uint64(c), uint64(g)))})
		}
	}
	count := func(s sender, kind string, sent, answered, now time.Time) {
		outs := []breaker.Outcome{{WebhookID: "wh_1", Kind: kind, Answered: answered, Sent: sent}}
		ks, args := s.b.CountArgs(now, outs)
		var seq *redis.IntCmd
		var cmd *redis.Cmd
		_, err := s.client.TxPipelined(ctx, func(p redis.Pipeliner) error {
			seq = p.Incr(ctx, seqKey)
			// EVAL, not EVALSHA: in a transaction NOSCRIPT cannot fall back, and other tests (this
			// package's TestScriptFlushKeepsWorking, internal/rdb's) flush the server's scripts.
			cmd = rdb.Count.Eval(ctx, p, ks, args...)
			return nil
		})
		if !assert.NoError(t, err) {
			return
		}
		ev, err := s.b.Counted(cmd, now, outs)
		if !assert.NoError(t, err) {
			return
		}
		mu.Lock()
		log = append(log, applied{seq: seq.Val(), kind: kind, sent: sent.UnixMilli(), answered: answered.UnixMilli(), ev: ev[0]})
		mu.Unlock()
	}
	mixed := func(s sender, n int) {
		for range n {
			kind := rdb.CountFailure
			if s.rng.IntN(5) < 2 { // 40% successes: runs of every length, closings
				kind = rdb.CountSuccess
			}
			now := time.Now()
			answered := now.Add(-time.Duration(s.rng.IntN(50)) * time.Millisecond)
			sent := answered.Add(-time.Duration(s.rng.IntN(20)) * time.Millisecond)
			count(s, kind, sent, answered, now)
		}
	}
	// Three rounds, every sender in each: a mix, then only failures sent after every success of the
	// first round was answered (so the circuit opens however fast Redis answers: a mix alone on a fast
	// Redis keeps a success answered after nearly every failure's send), then a mix again while open.
	rounds := []func(s sender){
		func(s sender) { mixed(s, each/2) },
		func(s sender) {
			for range breakAfter {
				now := time.Now()
				count(s, rdb.CountFailure, now, now, now)
			}
		},
		func(s sender) { mixed(s, each/2) },
	}
	for i, round := range rounds {
		if i == 1 {
			time.Sleep(2 * time.Millisecond) // past the millisecond of every answer so far
		}
		var wg sync.WaitGroup
		for _, s := range senders {
			wg.Go(func() { round(s) })
		}
		wg.Wait()
	}
	require.Len(t, log, clients*perClient*(each/2*2+breakAfter))
	slices.SortFunc(log, func(a, b applied) int { return int(a.seq - b.seq) })
	m := countModel{breakAfter: breakAfter}
	openings, late := 0, 0
	for i, a := range log {
		require.EqualValues(t, i+1, a.seq, "every count ran once, in sequence")
		if a.answered < m.newest {
			late++
		}
		wantOpened, wantClosed := m.apply(a.kind, a.sent, a.answered, 0)
		if wantOpened {
			openings++
		}
		m.requireFailures(t, a.ev.Health.ConsecutiveFailures, "count after outcome %d", i)
		require.Equal(t, m.open, a.ev.Health.State != CircuitClosed, "state after outcome %d", i)
		require.Equal(t, wantOpened, a.ev.Opened, "opened by outcome %d", i)
		require.Equal(t, wantClosed, a.ev.Closed, "closed by outcome %d", i)
	}
	t.Logf("%d outcomes, %d reached Redis after one answered later, %d openings", len(log), late, openings)
	require.Positive(t, openings, "the mix opened the circuit at least once")
	require.Greater(t, late, len(log)/4, "the mix was out of order")
	hs, err := breaker.New(breaker.Config{Client: tr.rdb, Keys: keys}).Read(ctx, time.Now(), "wh_1")
	require.NoError(t, err)
	m.requireFailures(t, hs["wh_1"].ConsecutiveFailures, "the stored count")
}

// countModel is the circuit breaker's rule (ms), kept exactly: the newest success's answer (never
// forgotten: with no circuit stored, the webhook's hourly hash keeps it), the send times of the
// failures sent after it, and whether the circuit is open (no probes here).
type countModel struct {
	breakAfter int
	lastOK     int64
	fails      []int64 // sent after lastOK
	open       bool
	newest     int64 // the newest answer applied, of any kind
}

// apply applies one outcome, in the order Redis ran it, and returns whether it opened or closed the
// circuit. A failure's seenOK (the newest success its replica counted, 0 for none) is a success
// applied first.
func (m *countModel) apply(kind string, sent, answered, seenOK int64) (opened, closed bool) {
	m.newest = max(m.newest, answered)
	if kind == rdb.CountSuccess {
		if answered < m.lastOK {
			return false, false // an older success
		}
		return false, m.success(answered)
	}
	if seenOK > m.lastOK {
		closed = m.success(seenOK)
	}
	if sent <= m.lastOK {
		return false, closed // sent before the newest success was answered
	}
	m.fails = append(m.fails, sent)
	if !m.open && len(m.fails) >= m.breakAfter {
		m.open = true
		return true, false
	}
	return false, closed
}

// success applies a success answered at answered (not older than lastOK) and reports whether it
// closed the circuit.
func (m *countModel) success(answered int64) bool {
	m.lastOK = answered
	m.fails = slices.DeleteFunc(m.fails, func(f int64) bool { return f <= answered })
	if m.open && len(m.fails) < m.breakAfter {
		m.open = false
		return true
	}
	return false
}

// requireFailures checks a circuit's ConsecutiveFailures against the model: exact below BreakAfter;
// from BreakAfter on, the circuit keeps only the newest BreakAfter times, so a success answered before
// all of them may leave it counting failures answered before that success: at least BreakAfter, at most
// those since the oldest kept run began.
func (m *countModel) requireFailures(t *testing.T, got int, msgAndArgs ...any) {
	t.Helper()
	if len(m.fails) < m.breakAfter {
		require.Equal(t, len(m.fails), got, msgAndArgs...)
		return
	}
	require.GreaterOrEqual(t, got, len(m.fails), msgAndArgs...)
}

// patternReceiver answers request n (from 0, in the order it answers them, one at a time) with 500
// when fail(n), else 200, at once: nothing waits for the library, so the answers reach it, and their
// counts reach Redis, in whatever order the scheduler gives them.
type patternReceiver struct {
	srv      *httptest.Server
	fail     func(n int) bool
	mu       sync.Mutex // held while a request takes its turn
	answered int64
	failed   atomic.Int64 // requests answered 500
	ok       sync.Map     // delivery id -> true once answered 200
	other    sync.Map     // errors of attempts answered neither 200 nor 500 (none expected)
}

func newPatternReceiver(t *testing.T, fail func(n int) bool) *patternReceiver {
	p := &patternReceiver{fail: fail}
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		failed := p.fail(int(p.answered))
		p.answered++
		p.mu.Unlock()
		if failed {
			p.failed.Add(1)
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		p.ok.Store(r.Header.Get("webhook-id"), true)
	}))
	t.Cleanup(p.srv.Close)
	return p
}

func (p *patternReceiver) requests() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.answered
}

func (p *patternReceiver) delivered() int {
	n := 0
	p.ok.Range(func(any, any) bool { n++; return true })
	return n
}

// TestFlakyWebhookKeepsItsCircuitClosed (DESIGN guarantees 2 and 4): a webhook whose requests never
// fail BreakAfter times in a row, in the order its receiver answered them, keeps its circuit closed:
// one broken backend of three behind a round robin (every 3rd request answered 500 at once), 16
// goroutines dispatching inline or enqueueing for Run, through one or three Dispatchers (separate Redis
// clients, each running Run); and requests failing BreakAfter-1 times in a row then succeeding. The
// receiver waits for nothing (patternReceiver). Every answer is counted once, with its outcome;
// replaying the counts in the order Redis ran them on the rule (countModel) gives every count's reply,
// and never BreakAfter failures in the run.
func TestFlakyWebhookKeepsItsCircuitClosed(t *testing.T) {
	t.Parallel()
	every3rd := func(n int) bool { return n%3 == 2 }
	for _, tc := range []struct {
		name       string
		breakAfter int
		events     int
		replicas   int
		enqueue    bool
		late       bool // failures' counts reach Redis 0-20ms late, successes' at once
		fail       func(n int) bool
	}{
		// 600 and 150 events with WEBHOOKS_LONG_TESTS (CI). Without it the every-3rd cases send 100:
		// on miniredis they did not fail at 300 either with the rule undone (Sends holding nothing,
		// counts stamped as sent when answered: 0 of 15 case runs), which the last case catches at
		// its size (3 of 3); what they check at any size is that every answer is counted once, as
		// what it was, and delivered.
		{"every 3rd request fails, inline, 3 replicas", DefaultBreakAfter, sized(100, 600), 3, false, false, every3rd},
		{"every 3rd request fails, inline, 1 replica", DefaultBreakAfter, sized(100, 600), 1, false, false, every3rd},
		{"every 3rd request fails, Run, 3 replicas", DefaultBreakAfter, sized(100, 600), 3, true, false, every3rd},
		{"every 3rd request fails, Run, 1 replica", DefaultBreakAfter, sized(100, 600), 1, true, false, every3rd},
		{"every 3rd request fails, failures counted late, inline, 3 replicas", DefaultBreakAfter, sized(100, 600), 3, false, true, every3rd},
		// One replica: its own attempts are ordered exactly (breaker.Sends); across replicas a success
		// counted after BreakAfter failures of others can still open the circuit (docs/delivery.md), and
		// with a single success between runs of BreakAfter-1 it does (issue 46's report).
		{"BreakAfter-1 fail in a row, then one succeeds, 1 replica", 3, sized(75, 150), 1, false, false, func(n int) bool { return n%3 != 2 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			tr := newTestRedis(t)
			var opened atomic.Int32
			rc := newPatternReceiver(t, tc.fail)
			schedule := slices.Repeat([]time.Duration{10 * time.Millisecond}, 40)
			counts := newCountLog()
			var ds []*Dispatcher
			for range tc.replicas {
				c := tr.newClient(t)
				if tc.late {
					c.AddHook(lateFailures{}) // first: it delays a count before the count log holds its turn
				}
				c.AddHook(counts)
				// Concurrency 16: each replica's worker holds as many attempts as the 16 goroutines do inline.
				ds = append(ds, newTestDispatcherOn(t, c, tr, Options{BreakAfter: tc.breakAfter, Concurrency: 16,
					BreakFor: time.Minute, Timeout: 10 * time.Second, RetrySchedule: schedule,
					Hooks: Hooks{CircuitOpened: func(string, time.Time) { opened.Add(1) },
						AttemptFinished: func(a AttemptInfo) {
							if a.StatusCode != http.StatusOK && a.StatusCode != http.StatusInternalServerError {
								rc.other.Store(a.Error, true)
							}
						}}}))
			}
			w, err := ds[0].Webhooks().Create(ctx, Webhook{URL: rc.srv.URL, Events: []string{"*"}})
			require.NoError(t, err)
			stop := runReplicas(t, ds)
			start := time.Now()
			sendSpread(t, ds, 16, tc.events, "f", tc.enqueue, func() bool { return opened.Load() == 0 })
			waitProgress(tc.events, rc.delivered, func() bool { return opened.Load() != 0 }, 5*time.Millisecond)
			took := time.Since(start)
			stop()
			t.Logf("requests %d, delivered %d of %d in %s, circuit openings %d", rc.requests(), rc.delivered(), tc.events,
				took.Round(time.Millisecond), opened.Load())
			assert.Zero(t, opened.Load(), "the circuit never opened (Hooks.CircuitOpened)")
			h, err := ds[0].Webhooks().Health(ctx, w.ID)
			require.NoError(t, err)
			assert.Equal(t, CircuitClosed, h.State)
			assert.Less(t, h.ConsecutiveFailures, tc.breakAfter)
			assert.Equal(t, tc.events, rc.delivered(), "every event delivered")
			r := replayCounts(t, counts.log(), tc.breakAfter)
			assert.Equal(t, rc.requests()-rc.failed.Load(), int64(r.successes), "every 2xx counted once, as a success")
			assert.Equal(t, rc.failed.Load(), int64(r.failures), "every 500 counted once, as a failure")
			assert.Less(t, r.longest, tc.breakAfter, "never BreakAfter failures in a row in the receiver's order")
			rc.other.Range(func(k, _ any) bool { t.Errorf("an attempt failed outside the pattern: %v", k); return true })
		})
	}
}

// lateFailures delays every command or pipeline carrying a failure's circuit count by 0 to 20ms at
// random (an outcome write retried, a slow goroutine): the counts reach Redis in another order than the
// receiver answered them, a failure after successes answered after it.
type lateFailures struct{ passHook }

func (lateFailures) delay(cmds ...redis.Cmder) {
	for _, c := range cmds {
		if isCount(c) && slices.Contains(c.Args(), any(rdb.CountFailure)) {
			time.Sleep(time.Duration(rand.IntN(20_000)) * time.Microsecond)
			return
		}
	}
}

func (h lateFailures) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error { h.delay(cmd); return next(ctx, cmd) }
}

func (h lateFailures) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error { h.delay(cmds...); return next(ctx, cmds) }
}

// TestBrokenWebhookOpensItsCircuitAtOnce: a webhook failing every request, dispatched from 16
// goroutines through three Dispatchers, opens its circuit once, by the time it has had at most
// BreakAfter requests plus twice those in flight (one out per goroutine, and one whose count waits for
// the attempts its process sent before its answer: TestBreakerLoopOpensOnAllFailing); every failed
// attempt is in the count.
func TestBrokenWebhookOpensItsCircuitAtOnce(t *testing.T) {
	t.Parallel()
	const goroutines, events = 16, 400
	ctx := context.Background()
	tr := newTestRedis(t)
	rc := newReceiver(t)
	rc.status.Store(http.StatusInternalServerError)
	var opened atomic.Int32
	var atOpen atomic.Int64
	var ds []*Dispatcher
	for range 3 {
		ds = append(ds, newTestDispatcherOn(t, tr.newClient(t), tr, Options{BreakAfter: DefaultBreakAfter,
			BreakFor: time.Minute, RetrySchedule: []time.Duration{time.Hour},
			Hooks: Hooks{CircuitOpened: func(string, time.Time) {
				if opened.Add(1) == 1 {
					atOpen.Store(int64(rc.count()))
				}
			}}}))
	}
	w := mustCreate(t, ds[0], rc, "*")
	stop := runReplicas(t, ds)
	sendSpread(t, ds, goroutines, events, "b", false, nil)
	stop()
	t.Logf("requests %d (at opening %d), openings %d", rc.count(), atOpen.Load(), opened.Load())
	require.EqualValues(t, 1, opened.Load(), "opened once, and not again without a probe")
	assert.LessOrEqual(t, atOpen.Load(), int64(DefaultBreakAfter+2*goroutines), "opened within BreakAfter + twice the attempts in flight")
	h, err := ds[2].Webhooks().Health(ctx, w.ID)
	require.NoError(t, err)
	assert.Equal(t, CircuitOpen, h.State)
	assert.Equal(t, rc.count(), h.ConsecutiveFailures, "every failed attempt counted, none lost")
}

// TestCircuitCountCostsNoRoundTrip: with the breaker on, a fresh Dispatch to a healthy webhook is two
// round trips, the claim and one pipeline carrying the outcome write and the circuit count, and the
// count leaves no circuit behind.
func TestCircuitCountCostsNoRoundTrip(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	if tr.isCluster() {
		t.Skip("a cluster pipeline is one round trip per node, in parallel: counted per node here")
	}
	c := tr.newClient(t)
	rt := &roundTrips{}
	c.AddHook(rt)
	var script atomic.Int32
	d := newTestDispatcherOn(t, c, tr, Options{BreakAfter: DefaultBreakAfter})
	d.now = newTestClock().Now // the circuit cached below stays cached however slow the machine
	rc := newReceiver(t)
	w := mustCreate(t, d, rc, "x")
	_, err := d.Dispatch(ctx, Event{Type: "x", ID: "warm"}) // caches the subscribers and the circuit, loads the scripts
	require.NoError(t, err)
	pinSubscribers(t, d, "x", 1)
	c.AddHook(scriptCounter{sha: rdb.Count.Hash(), n: &script})
	rt.n.Store(0)
	res, err := d.Dispatch(ctx, Event{Type: "x", ID: "fresh"})
	require.NoError(t, err)
	require.NoError(t, res[0].Err)
	assert.EqualValues(t, 2, rt.n.Load(), "the claim, then the outcome and the count in one pipeline")
	assert.EqualValues(t, 1, script.Load(), "the count was sent")
	assert.False(t, tr.rdb.HExists(ctx, d.keys.Circuits(), w.ID).Val(), "no circuit for a healthy webhook")
}

// scriptCounter counts the runs of one script (by SHA) in pipelines.
type scriptCounter struct {
	passHook
	sha string
	n   *atomic.Int32
}

func (h scriptCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, c := range cmds {
			if args := c.Args(); len(args) > 1 && fmt.Sprint(args[1]) == h.sha {
				h.n.Add(1)
			}
		}
		return next(ctx, cmds)
	}
}

// countLog records the circuit counts (rdb.Count runs) of the clients it hooks, in the order Redis
// ran them: its hook sends a command or pipeline carrying a count only while no other one is in
// flight (across all the hooked clients), so the order in which it sees them return is Redis's order.
// Everything else those clients send goes through untouched, concurrently.
type countLog struct {
	passHook
	mu      *sync.Mutex // held while a count is in flight
	entries *[]countEntry
}

// countEntry is one outcome as a count applied it, and the circuit the count left.
type countEntry struct {
	webhookID, kind, probe string
	answered, sent, seenOK int64 // ms
	event                  int64 // rdb.EventNone, rdb.EventOpened or rdb.EventClosed
	failures               int
	open                   bool
}

func newCountLog() countLog {
	return countLog{mu: &sync.Mutex{}, entries: &[]countEntry{}}
}

// log returns the counts recorded so far, in Redis's order.
func (l countLog) log() []countEntry {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(*l.entries)
}

// isCount reports whether c runs rdb.Count (EVALSHA, or EVAL of its source).
func isCount(c redis.Cmder) bool {
	args := c.Args()
	if len(args) < 3 {
		return false
	}
	switch strings.ToLower(fmt.Sprint(args[0])) {
	case "evalsha":
		return fmt.Sprint(args[1]) == rdb.Count.Hash()
	case "eval":
		sum := sha1.Sum([]byte(fmt.Sprint(args[1])))
		return hex.EncodeToString(sum[:]) == rdb.Count.Hash()
	}
	return false
}

func (l countLog) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if !isCount(cmd) {
			return next(ctx, cmd)
		}
		l.mu.Lock()
		defer l.mu.Unlock()
		err := next(ctx, cmd)
		l.add(cmd)
		return err
	}
}

func (l countLog) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if !slices.ContainsFunc(cmds, isCount) {
			return next(ctx, cmds)
		}
		l.mu.Lock()
		defer l.mu.Unlock()
		err := next(ctx, cmds)
		for _, c := range cmds {
			if isCount(c) {
				l.add(c)
			}
		}
		return err
	}
}

// add records a count Redis ran (one that failed, NOSCRIPT say, changed nothing); l.mu is held.
func (l countLog) add(c redis.Cmder) {
	cmd, ok := c.(*redis.Cmd)
	if !ok || cmd.Err() != nil {
		return
	}
	reply, err := cmd.Slice()
	if err != nil {
		return
	}
	args := cmd.Args() // evalsha|eval, sha|source, numkeys, keys..., ARGV...
	numKeys, _ := strconv.Atoi(fmt.Sprint(args[2]))
	argv := args[3+numKeys:]
	n := len(reply) / 2 // outcomes: after 4 arguments, each its webhook id, kind, probe token, answer, send and seenOK times first
	if n == 0 || (len(argv)-4)%n != 0 {
		return
	}
	stride := (len(argv) - 4) / n
	for i := range n {
		a := 4 + i*stride
		event, _ := reply[2*i].(int64)
		s, _ := reply[2*i+1].(string)
		circ := breaker.HealthOf(fmt.Sprint(argv[a]), s, time.Time{})
		ms := func(i int) int64 { v, _ := strconv.ParseInt(fmt.Sprint(argv[a+i]), 10, 64); return v }
		*l.entries = append(*l.entries, countEntry{webhookID: fmt.Sprint(argv[a]), kind: fmt.Sprint(argv[a+1]),
			probe: fmt.Sprint(argv[a+2]), answered: ms(3), sent: ms(4), seenOK: ms(5), event: event,
			failures: circ.ConsecutiveFailures, open: circ.State != CircuitClosed})
	}
}

// countReplay is what replaying a log of counts on the rule found.
type countReplay struct {
	outcomes, successes, failures int
	runs                          int // runs of at least BreakAfter failures in the rule's run
	longest                       int // the most failures in the rule's run
	openings                      int // counts that opened a closed circuit
	reopenings                    int // failed probes that opened an open circuit again
}

// replayCounts checks a log of counts (Redis's order) against the rule (countModel), outcome by
// outcome: a success (or a failure's seenOK) drops the failures sent at or before its answer and closes
// an open circuit that keeps fewer than breakAfter; a failure sent after the newest success's answer
// adds one and opens a closed circuit when breakAfter are kept; only a failed probe opens an open
// circuit again. Every count must leave exactly
// the circuit the rule gives; it returns what the replay found.
func replayCounts(t *testing.T, log []countEntry, breakAfter int) countReplay {
	t.Helper()
	var r countReplay
	m := countModel{breakAfter: breakAfter}
	for i, e := range log {
		r.outcomes++
		switch e.kind {
		case rdb.CountSuccess:
			r.successes++
			_, closed := m.apply(e.kind, e.sent, e.answered, 0)
			require.Equal(t, map[bool]int64{true: rdb.EventClosed, false: rdb.EventNone}[closed], e.event, "count %d: a success closes an open circuit it leaves below BreakAfter", i)
		case rdb.CountFailure:
			r.failures++
			wasOpen := m.open
			opened, closed := m.apply(e.kind, e.sent, e.answered, e.seenOK)
			r.longest = max(r.longest, len(m.fails))
			switch {
			case closed: // by the success its replica counted (seenOK)
				require.EqualValues(t, rdb.EventClosed, e.event, "count %d: a failure's seenOK closes an open circuit it leaves below BreakAfter", i)
			case opened:
				require.EqualValues(t, rdb.EventOpened, e.event, "count %d: failure %d in a row opens", i, len(m.fails))
				r.openings++
				r.runs++
			case wasOpen && e.event == rdb.EventOpened:
				require.NotEmpty(t, e.probe, "count %d: only a probe opens an open circuit again", i)
				r.reopenings++
			default:
				require.EqualValues(t, rdb.EventNone, e.event, "count %d: failure %d in a row, open %v", i, len(m.fails), m.open)
			}
		default:
			require.Failf(t, "an outcome neither a success nor a failure", "count %d: %q", i, e.kind)
		}
		m.requireFailures(t, e.failures, "count %d: the consecutive count", i)
		require.Equal(t, m.open, e.open, "count %d: the circuit's state", i)
	}
	return r
}

// runsBound is the smallest m such that n independent outcomes, each a failure with probability p,
// hold m or more runs of at least k consecutive failures with probability below odds, and that
// probability's bound. Runs that can both occur start more than k apart, so their events are
// independent, and the union bound over every set of m starts gives P(at least m runs) <= C(n, m) p^(km).
func runsBound(n, k int, p, odds float64) (int, float64) {
	logTerm := func(m int) float64 { // log C(n, m) p^(km)
		lgN, _ := math.Lgamma(float64(n + 1))
		lgM, _ := math.Lgamma(float64(m + 1))
		lgNM, _ := math.Lgamma(float64(n - m + 1))
		return lgN - lgM - lgNM + float64(k*m)*math.Log(p)
	}
	for m := 1; m <= n; m++ {
		if b := math.Exp(logTerm(m)); b < odds {
			return m, b
		}
	}
	return n + 1, 0
}

// TestRandomFailuresOpenTheCircuitOnlyOnTheirOdds (DESIGN guarantee 1, issue 20): a webhook whose
// requests fail independently with probability 0.1 (a seeded sequence), dispatched inline from 16
// goroutines through three Dispatchers (separate Redis clients, each running Run), with retries and
// probes going: every attempt is counted exactly once, with its outcome; replaying the counts in the
// order Redis ran them on the rule gives every count's reply, so the circuit opened exactly once per
// run of BreakAfter consecutive failures in that order, never without one; and the openings stay
// within the rule's own odds: fewer than the least m for which n independent outcomes (every request
// answered, counted or not) hold m runs with probability below 1e-6 (runsBound: with n about 1,665 that
// is m = 3 for BreakAfter 5, where 0.015 are expected, and m = 55 for BreakAfter 2, where about 15 are;
// 1,500 events per case with WEBHOOKS_LONG_TESTS, 500 otherwise).
// The exact side is the guarantee; the odds catch a gross excess (under issue 46's rule the openings
// are rarer still: a failure sent before a success's answer does not count). (The rule of 77c4ab0, where a success
// reset the count only when the process's cached circuit showed failures, fails the exact side: about
// a quarter of the 2xx were counted. Its openings, 2 and 35 in one run, stayed within the odds.)
func TestRandomFailuresOpenTheCircuitOnlyOnTheirOdds(t *testing.T) {
	t.Parallel()
	const p, falseAlarm, goroutines = 0.1, 1e-6, 16
	for _, tc := range []struct {
		name       string
		breakAfter int
		events     int
		seed       uint64
	}{
		// 1,500 events each with WEBHOOKS_LONG_TESTS (CI); 500 otherwise, the bound computed from the
		// requests answered all the same.
		{"BreakAfter 2: openings as the runs", 2, sized(500, 1500), 1},
		{"BreakAfter 5 (default): the odds", DefaultBreakAfter, sized(500, 1500), 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			tr := newTestRedis(t)
			rng := rand.New(rand.NewPCG(tc.seed, 20))
			fails := make([]bool, 4*tc.events) // the answer to request n, in the order the receiver answers
			for i := range fails {
				fails[i] = rng.Float64() < p
			}
			var answered, ok500, ok200, over atomic.Int64
			var delivered sync.Map
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				n := answered.Add(1) - 1
				switch {
				case n >= int64(len(fails)):
					over.Add(1)
				case fails[n]:
					ok500.Add(1)
					w.WriteHeader(http.StatusInternalServerError)
					return
				}
				ok200.Add(1)
				delivered.Store(r.Header.Get("webhook-id"), true)
			}))
			t.Cleanup(srv.Close)
			counts := newCountLog()
			var opened atomic.Int32
			var ds []*Dispatcher
			for range 3 {
				c := tr.newClient(t)
				c.AddHook(counts)
				ds = append(ds, newTestDispatcherOn(t, c, tr, Options{BreakAfter: tc.breakAfter,
					BreakFor: 100 * time.Millisecond, Timeout: 10 * time.Second,
					RetrySchedule: slices.Repeat([]time.Duration{10 * time.Millisecond}, 40),
					Hooks:         Hooks{CircuitOpened: func(string, time.Time) { opened.Add(1) }}}))
			}
			w, err := ds[0].Webhooks().Create(ctx, Webhook{URL: srv.URL, Events: []string{"*"}})
			require.NoError(t, err)
			stop := runReplicas(t, ds)
			sendSpread(t, ds, goroutines, tc.events, "r", false, nil)
			deliveredN := func() int {
				n := 0
				delivered.Range(func(any, any) bool { n++; return true })
				return n
			}
			waitProgress(tc.events, deliveredN, nil, 20*time.Millisecond)
			stop()

			log := counts.log()
			for _, e := range log {
				require.Equal(t, w.ID, e.webhookID)
			}
			r := replayCounts(t, log, tc.breakAfter)
			bound, odds := runsBound(int(answered.Load()), tc.breakAfter, p, falseAlarm) // every outcome, counted or not
			t.Logf("%d requests (%d failed), %d counted; runs of %d+ failures %d (longest %d); openings %d, reopenings by probes %d; bound: fewer than %d (P(>= %d) <= %.2g)",
				answered.Load(), ok500.Load(), r.outcomes, tc.breakAfter, r.runs, r.longest, r.openings, r.reopenings, bound, bound, odds)
			require.Zero(t, over.Load(), "the seeded sequence covers every request")
			assert.EqualValues(t, ok200.Load(), r.successes, "every 2xx counted once, as a success")
			assert.EqualValues(t, ok500.Load(), r.failures, "every 500 counted once, as a failure")
			assert.Equal(t, r.runs, r.openings, "one opening per run of BreakAfter consecutive failures in Redis's order, none without")
			assert.EqualValues(t, r.openings+r.reopenings, opened.Load(), "Hooks.CircuitOpened once per opening")
			assert.Less(t, r.openings, bound, "openings within the rule's own odds (false alarm %.2g)", odds)
			assert.Equal(t, tc.events, deliveredN(), "every event delivered")
			// No floor on the openings: the seeded sequence holds 7 runs of 2 in its first 500 answers (15
			// in 1,500), but with 16 attempts in flight a success is nearly always out while two failures
			// are, and the rule (docs/delivery.md) does not count a failure sent before a success's answer.
			// TestBreakerLoopOpensOnAllFailing and TestBrokenWebhookOpensItsCircuitAtOnce open it.
		})
	}
}

// runReplicas starts Run on every Dispatcher of ds and returns the function that ends them all and
// waits for them.
func runReplicas(t *testing.T, ds []*Dispatcher) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	var runs sync.WaitGroup
	for _, d := range ds {
		runs.Go(func() { assert.NoError(t, d.Run(ctx)) })
	}
	return func() { cancel(); runs.Wait() }
}

// sendSpread dispatches (or, with enqueue, enqueues) the events <prefix>-1 to <prefix>-<events> of
// type "e" from goroutines, goroutine g on ds[g % len(ds)], while keepOn (nil: always) holds, and
// returns once they are done.
func sendSpread(t *testing.T, ds []*Dispatcher, goroutines, events int, prefix string, enqueue bool, keepOn func() bool) {
	sendSpreadType(t, ds, goroutines, events, "e", prefix, enqueue, keepOn)
}

// sendSpreadType is sendSpread of events of type typ.
func sendSpreadType(t *testing.T, ds []*Dispatcher, goroutines, events int, typ, prefix string, enqueue bool, keepOn func() bool) {
	var next atomic.Int64
	var callers sync.WaitGroup
	for g := range goroutines {
		callers.Go(func() {
			for i := next.Add(1); i <= int64(events) && (keepOn == nil || keepOn()); i = next.Add(1) {
				d, evt := ds[g%len(ds)], Event{Type: typ, ID: fmt.Sprintf("%s-%d", prefix, i)}
				var err error
				if enqueue {
					_, err = d.Enqueue(context.Background(), evt)
				} else {
					_, err = d.Dispatch(context.Background(), evt)
				}
				assert.NoError(t, err)
			}
		})
	}
	callers.Wait()
}
