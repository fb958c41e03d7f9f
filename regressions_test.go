package webhooks

// Regression tests for defects found in review: each failed before its fix.

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/smartdrop/webhooks/internal/rdb"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// slowClaimReply delays the reply of claim scripts (after they ran).
type slowClaimReply struct {
	passHook
	delay time.Duration
}

func (h *slowClaimReply) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if isClaim(cmd) {
			time.Sleep(h.delay)
		}
		return err
	}
}

// the first-attempt lease starts before the claim round trip; a slow claim reply eats the margin
// and a worker attempts the same delivery concurrently with Dispatch.
func TestSlowClaimReplyDoesNotDoubleSend(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	slowClient := tr.newClient(t)
	slowClient.AddHook(&slowClaimReply{delay: 1500 * time.Millisecond})
	a := newTestDispatcherOn(t, slowClient, tr, Options{Timeout: 200 * time.Millisecond})
	b := newTestDispatcherOn(t, tr.newClient(t), tr, Options{Timeout: 200 * time.Millisecond})
	t.Logf("lease %s", a.lease)
	rc := newReceiver(t)
	mustCreate(t, a, rc, "x")
	done := make(chan []Result, 1)
	go func() {
		res, err := a.Dispatch(ctx, Event{Type: "x", ID: "slow-claim"})
		assert.NoError(t, err)
		done <- res
	}()
	rctx, stop := context.WithCancel(ctx)
	go func() { _ = b.Run(rctx) }()
	res := <-done
	// b takes it over once its lease has ended (a sweep finds it); then no second request follows.
	eventually(t, 5*time.Second, func() bool { return rc.count() >= 1 }, "a worker takes the delivery over")
	time.Sleep(300 * time.Millisecond)
	stop()
	require.ErrorIs(t, res[0].Err, ErrDeferred, "a claim answered too late to attempt within its lease is left to the worker")
	assert.Equal(t, 1, rc.count(), "one request for one pair (got %d)", rc.count())
}

// one undecodable webhook in the registry makes every worker pass that leases any of its
// deliveries fail, so the other webhooks' due deliveries in that pass are never attempted.
func TestUndecodableWebhookDoesNotWedgeTheWorker(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	d, clock := newClockedDispatcher(t, tr, Options{RetrySchedule: []time.Duration{time.Minute, time.Minute}})
	good, bad := newReceiver(t), newReceiver(t)
	good.status.Store(500)
	bad.status.Store(500)
	mustCreate(t, d, good, "x")
	wBad := mustCreate(t, d, bad, "x")
	_, err := d.Dispatch(ctx, Event{Type: "x", ID: "e1"})
	require.NoError(t, err)
	require.Equal(t, 1, good.count())
	good.status.Store(200)
	require.NoError(t, tr.rdb.HSet(ctx, d.keys.Webhooks(), wBad.ID, "{not json").Err())
	for range 5 {
		clock.Advance(2*time.Minute + d.lease)
		n, err := d.ProcessDue(ctx)
		t.Logf("pass: n=%d err=%v", n, err)
	}
	assert.Equal(t, 2, good.count(), "the good webhook's retry is made despite the bad one")
}

// DeliveryRepo.List on an unknown webhook id.
func TestListUnknownWebhook(t *testing.T) {
	t.Parallel()
	tr := newTestRedis(t)
	d := newTestDispatcher(t, tr, Options{})
	l, err := d.Deliveries().List(context.Background(), "wh_nope", 10)
	t.Logf("list=%v err=%v", l, err)
	assert.ErrorIs(t, err, ErrNotFound)
}

// Redeliver drops a completed 2xx attempt when ctx ends during the body read; the worker re-sends.
func TestRedeliverKeepsACompletedAttempt(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	d, clock := newClockedDispatcher(t, tr, Options{RetrySchedule: []time.Duration{}})
	var reqs atomic.Int32
	var mode atomic.Int32 // 0: 500, 1: 200, then the caller's context ends during the body read, 2: 200
	// The caller's context ends once the attempt got the answer's first byte (and a grace for the
	// transport to read its header): by that progress, not a deadline a loaded machine may pass first.
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cctx = httptrace.WithClientTrace(cctx, &httptrace.ClientTrace{
		GotFirstResponseByte: func() { time.AfterFunc(100*time.Millisecond, cancel) }})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		reqs.Add(1)
		switch mode.Load() {
		case 0:
			w.WriteHeader(500)
		case 1:
			w.WriteHeader(200)
			w.(http.Flusher).Flush()
			select { // the body once the caller's context ended during its read
			case <-cctx.Done():
			case <-time.After(time.Minute):
			}
			fmt.Fprint(w, "ok")
		default:
			w.WriteHeader(200)
		}
	}))
	defer srv.Close()
	w, err := d.Webhooks().Create(ctx, Webhook{URL: srv.URL, Events: []string{"x"}})
	require.NoError(t, err)
	res, err := d.Dispatch(ctx, Event{Type: "x", ID: "rd"})
	require.NoError(t, err)
	require.Equal(t, StatusFailed, res[0].Delivery.Status)
	_ = w
	mode.Store(1)
	dl, err := d.Redeliver(cctx, res[0].Delivery.ID)
	require.NotNil(t, dl, "%v", err)
	t.Logf("redeliver: status=%v err=%v", dl.Status, err)
	mode.Store(2)
	clock.Advance(d.lease + time.Second)
	n, err := d.ProcessDue(ctx)
	t.Logf("worker: n=%d err=%v", n, err)
	assert.Equal(t, int32(2), reqs.Load(), "receiver answered 200 to the redelivery; it must not get it again")
}

// auto-disable after one failure: a failure run start in one shard is never cleared by successes
// in other shards.
func TestAutoDisableNeedsALongRunOfFailures(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	d, clock := newClockedDispatcher(t, tr, Options{RetrySchedule: []time.Duration{}, DisableAfter: time.Hour})
	var status atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(int(status.Load()))
	}))
	defer srv.Close()
	w, err := d.Webhooks().Create(ctx, Webhook{URL: srv.URL, Events: []string{"x"}})
	require.NoError(t, err)
	sameShard := func(base string, s int) string { return eventIDsInShard(t, base, s, 1)[0] }
	status.Store(400) // one poison event rejected
	_, err = d.Dispatch(ctx, Event{Type: "x", ID: sameShard("a", 3)})
	require.NoError(t, err)
	status.Store(200) // then many successes, elsewhere
	for i := range 5 {
		_, err = d.Dispatch(ctx, Event{Type: "x", ID: sameShard(fmt.Sprint("ok", i), 5)})
		require.NoError(t, err)
	}
	clock.Advance(61 * time.Minute) // quiet
	status.Store(503)               // one transient failure
	_, err = d.Dispatch(ctx, Event{Type: "x", ID: sameShard("c", 3)})
	require.NoError(t, err)
	got, err := d.Webhooks().Get(ctx, w.ID)
	require.NoError(t, err)
	assert.False(t, got.Disabled, "one failure after a success and a quiet hour must not disable")
}

// holdSubs holds the subscribers pipeline after it read, once armed.
type holdSubs struct {
	passHook
	armed   atomic.Bool
	entered chan struct{}
	release chan struct{}
}

// ProcessHook holds the script that resolves subscribers (its keys hold ":sub:") once, when armed.
func (h *holdSubs) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		name := strings.ToLower(cmd.Name())
		if err == nil && (name == "evalsha" || name == "eval") && strings.Contains(fmt.Sprint(cmd.Args()), ":sub:") && h.armed.CompareAndSwap(true, false) {
			close(h.entered)
			select { // bounded: a test that never releases fails below rather than hanging
			case <-h.release:
			case <-time.After(10 * time.Second):
			}
		}
		return err
	}
}

// the replica that disabled a webhook can still target it for up to a second.
func TestOwnRegistryChangeIsSeenAtOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	c := tr.newClient(t)
	h := &holdSubs{entered: make(chan struct{}), release: make(chan struct{})}
	c.AddHook(h)
	d := newTestDispatcherOn(t, c, tr, Options{})
	rc := newReceiver(t)
	w := mustCreate(t, d, rc, "x")
	h.armed.Store(true)
	go func() { _, _ = d.Dispatch(ctx, Event{Type: "x", ID: "e0"}) }()
	select {
	case <-h.entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the resolution of subscribers was never held: the hook no longer sees it")
	}
	w.Disabled = true
	_, err := d.Webhooks().Update(ctx, *w)
	require.NoError(t, err)
	close(h.release)
	time.Sleep(100 * time.Millisecond)
	res, err := d.Dispatch(ctx, Event{Type: "x", ID: "e1"})
	require.NoError(t, err)
	assert.Empty(t, res, "disabled on this replica: no target at once")
}

// dropProxy forwards TCP to Redis; when armed, it drops the next reply by closing the connection.
type dropProxy struct {
	ln    net.Listener
	armed atomic.Bool
}

func newDropProxy(t *testing.T, target string) *dropProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &dropProxy{ln: ln}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			cc, err := ln.Accept()
			if err != nil {
				return
			}
			sc, err := net.Dial("tcp", target)
			if err != nil {
				cc.Close()
				continue
			}
			go func() { _, _ = io.Copy(sc, cc); sc.Close() }()
			go func() {
				buf := make([]byte, 64<<10)
				for {
					n, err := sc.Read(buf)
					if n > 0 {
						if p.armed.CompareAndSwap(true, false) {
							cc.Close()
							sc.Close()
							return
						}
						if _, werr := cc.Write(buf[:n]); werr != nil {
							return
						}
					}
					if err != nil {
						cc.Close()
						return
					}
				}
			}()
		}
	}()
	return p
}

// armOnOutcome arms the proxy right before the outcome script is sent.
type armOnOutcome struct {
	passHook
	p    *dropProxy
	once atomic.Bool
}

func (h *armOnOutcome) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		args := cmd.Args()
		if len(args) > 1 && strings.EqualFold(fmt.Sprint(args[0]), "evalsha") && args[1] == rdb.Outcome.Hash() && h.once.CompareAndSwap(false, true) {
			h.p.armed.Store(true)
		}
		return next(ctx, cmd)
	}
}

// go-redis re-sends a command whose reply was lost (MaxRetries); the outcome script is not
// idempotent, so the recorded outcome is reported as a lost lease.
func TestOutcomeRetriedByTheClientIsReportedRecorded(t *testing.T) {
	t.Parallel()
	addr := os.Getenv("WEBHOOKS_REDIS_ADDR")
	if addr == "" {
		t.Skip("real redis")
	}
	ctx := context.Background()
	tr := newTestRedis(t)
	p := newDropProxy(t, addr)
	c := redis.NewClient(&redis.Options{Addr: p.ln.Addr().String()})
	t.Cleanup(func() { c.Close() })
	c.AddHook(&armOnOutcome{p: p})
	d := newTestDispatcherOn(t, c, tr, Options{})
	rc := newReceiver(t)
	mustCreate(t, d, rc, "x")
	res, err := d.Dispatch(ctx, Event{Type: "x", ID: "o1"})
	require.NoError(t, err)
	t.Logf("result: status=%s err=%v", res[0].Delivery.Status, res[0].Err)
	stored, err := d.Deliveries().Get(ctx, res[0].Delivery.ID)
	require.NoError(t, err)
	t.Logf("stored: status=%s attempts=%d", stored.Status, stored.Attempts)
	assert.NoError(t, res[0].Err, "the outcome was recorded")
	assert.Equal(t, stored.Status, res[0].Delivery.Status)
}

// longLeaseReply appends an extra item to lease script replies.
type longLeaseReply struct{ passHook }

func (h *longLeaseReply) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		args := cmd.Args()
		if err == nil && len(args) > 1 && (args[1] == rdb.Lease.Hash() || strings.Contains(fmt.Sprint(args[1]), "leaseEnd")) {
			c := cmd.(*redis.Cmd)
			v, _ := c.Val().([]any)
			c.SetVal(append(v, "corrupt"))
		}
		return err
	}
}

// an unexpected lease reply length panics the worker.
func TestUnexpectedLeaseReplyDoesNotPanic(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	c := tr.newClient(t)
	clock := newTestClock()
	d := newTestDispatcherOn(t, c, tr, Options{RetrySchedule: []time.Duration{time.Minute}})
	d.now = clock.Now
	rc := newReceiver(t)
	rc.status.Store(500)
	mustCreate(t, d, rc, "x")
	_, err := d.Dispatch(ctx, Event{Type: "x", ID: "e"})
	require.NoError(t, err)
	c.AddHook(&longLeaseReply{})
	clock.Advance(2 * time.Minute)
	assert.NotPanics(t, func() { _, _ = d.ProcessDue(ctx) })
}

// A claim reply late enough that a whole attempt no longer fits in the lease (lease 1.2s, of which
// 0.5s is margin; the reply takes 0.7s): the attempt is left to the worker, not cut short and charged
// to the subscriber as a failure.
func TestLateClaimDefersInsteadOfTruncating(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	c := tr.newClient(t)
	c.AddHook(&slowClaimReply{delay: 700 * time.Millisecond})
	d := newTestDispatcherOn(t, c, tr, Options{Timeout: 200 * time.Millisecond})
	require.Equal(t, 1200*time.Millisecond, d.lease)
	rc := newReceiver(t)
	mustCreate(t, d, rc, "x")
	res, err := d.Dispatch(ctx, Event{Type: "x", ID: "b1"})
	require.NoError(t, err)
	require.ErrorIs(t, res[0].Err, ErrDeferred)
	assert.Equal(t, 0, rc.count(), "no attempt was started")
	stored, err := d.Deliveries().Get(ctx, res[0].Delivery.ID)
	require.NoError(t, err)
	assert.Equal(t, StatusPending, stored.Status)
	assert.Equal(t, 0, stored.Attempts, "nothing was charged to the subscriber")
}

// ProcessDue counts only outcomes it recorded, and reports the others, also alongside an undecodable
// webhook's deliveries.
func TestProcessDueCountsRecordedOutcomes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	d, clock := newClockedDispatcher(t, tr, Options{RetrySchedule: []time.Duration{time.Minute, time.Minute}})
	good, bad := newReceiver(t), newReceiver(t)
	good.status.Store(500)
	bad.status.Store(500)
	mustCreate(t, d, good, "x")
	wBad := mustCreate(t, d, bad, "x")
	for i := range 8 {
		_, err := d.Dispatch(ctx, Event{Type: "x", ID: fmt.Sprintf("e%d", i)})
		require.NoError(t, err)
	}
	require.NoError(t, tr.rdb.HSet(ctx, d.keys.Webhooks(), wBad.ID, "{not json").Err())
	good.setHook(func(r *http.Request) {
		id := r.Header.Get("webhook-id")
		s, _ := shardOfDelivery(id)
		stealLease(t, tr.rdb, d.keys.Delivery(s, id)) // another worker's lease
	})
	clock.Advance(2*time.Minute + d.lease)
	n, err := d.ProcessDue(ctx)
	require.Equal(t, 0, n, "no outcome was recorded in this pass")
	require.ErrorIs(t, err, ErrLeaseLost)

}

// runTwice runs the first run of its script it sees twice and answers with the second run, as a client
// does that sends a command again after losing its reply.
type runTwice struct {
	passHook
	script *redis.Script
	done   atomic.Bool
}

func (h *runTwice) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		args := cmd.Args()
		isScript := len(args) > 1 && (args[1] == h.script.Hash() || redis.NewScript(fmt.Sprint(args[1])).Hash() == h.script.Hash())
		if !isScript || h.done.Load() {
			return next(ctx, cmd)
		}
		if err := next(ctx, cmd); err != nil {
			return err // NOSCRIPT, say: the EVAL fallback comes through here again
		}
		h.done.Store(true)
		return next(ctx, cmd) // the script ran; the client sends it again
	}
}

// A Redeliver whose script ran twice (a client retry) still knows it reset the delivery, and sends it
// once, at once.
func TestRedeliverRetriedByTheClientStillSends(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	c := tr.newClient(t)
	c.AddHook(&runTwice{script: rdb.Redeliver})
	d := newTestDispatcherOn(t, c, tr, Options{RetrySchedule: []time.Duration{}})
	rc := newReceiver(t)
	rc.status.Store(http.StatusInternalServerError)
	mustCreate(t, d, rc, "x")
	res, err := d.Dispatch(ctx, Event{Type: "x", ID: "twice"})
	require.NoError(t, err)
	require.Equal(t, StatusFailed, res[0].Delivery.Status)
	rc.status.Store(http.StatusOK)
	dl, reset, err := d.resend.Redeliver(ctx, res[0].Delivery.ID, true)
	require.NoError(t, err)
	assert.True(t, reset, "the retried script reports the reset")
	assert.Equal(t, StatusSuccess, dl.Status)
	assert.Equal(t, 2, rc.count(), "one new request")
}

// A lease whose script ran twice (a client retry) is still this pass's: the due retry is attempted in
// the same pass, not one lease later.
func TestLeaseRetriedByTheClientStillAttempts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	c := tr.newClient(t)
	c.AddHook(&runTwice{script: rdb.Lease})
	d := newTestDispatcherOn(t, c, tr, Options{RetrySchedule: []time.Duration{time.Minute}})
	clock := newTestClock()
	d.now = clock.Now
	rc := newReceiver(t)
	rc.status.Store(http.StatusInternalServerError)
	mustCreate(t, d, rc, "x")
	res, err := d.Dispatch(ctx, Event{Type: "x", ID: "lease-twice"})
	require.NoError(t, err)
	require.Equal(t, StatusPending, res[0].Delivery.Status)
	rc.status.Store(http.StatusOK)
	clock.Advance(2 * time.Minute)
	n, err := d.ProcessDue(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, n, "attempted in this pass")
	dl, err := d.Deliveries().Get(ctx, res[0].Delivery.ID)
	require.NoError(t, err)
	assert.Equal(t, StatusSuccess, dl.Status)
	assert.Equal(t, 2, rc.count())
}

// A Redeliver in the very millisecond of the claim still gives the delivery a later expiry, so its old
// index entry is told apart from the new one and a listing shows the delivery once.
func TestRedeliverInTheSameMillisecondIsListedOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	d, _ := newClockedDispatcher(t, tr, Options{RetrySchedule: []time.Duration{}}) // the clock stands still
	rc := newReceiver(t)
	rc.status.Store(http.StatusInternalServerError)
	wh := mustCreate(t, d, rc, "*")
	res, err := d.Dispatch(ctx, Event{Type: "a.b", ID: "same-ms"})
	require.NoError(t, err)
	require.Equal(t, StatusFailed, res[0].Delivery.Status)
	dl, err := d.Redeliver(ctx, res[0].Delivery.ID)
	require.NoError(t, err)
	assert.True(t, dl.ExpiresAt.After(res[0].Delivery.ExpiresAt))
	page, err := d.Deliveries().Page(ctx, wh.ID, DeliveryQuery{})
	require.NoError(t, err)
	assert.Len(t, page.Deliveries, 1, "listed once")
}

// An index key holding something else makes the claim fail before it writes anything: no record, no
// schedule entry, and the listing reports the error.
func TestForeignIndexKeyClaimsNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	d := newTestDispatcher(t, tr, Options{})
	rc := newReceiver(t)
	wh := mustCreate(t, d, rc, "*")
	s := shardOf("e1")
	require.NoError(t, tr.rdb.ZAdd(ctx, d.keys.Index(s, wh.ID), redis.Z{Score: 1, Member: "old"}).Err())
	res, err := d.Dispatch(ctx, Event{Type: "a.b", ID: "e1"})
	require.ErrorIs(t, err, ErrNotAccepted)
	require.Error(t, res[0].Err)
	_, err = d.Deliveries().Find(ctx, wh.ID, "e1")
	require.ErrorIs(t, err, ErrNotFound, "nothing was claimed")
	assert.Zero(t, tr.rdb.ZCard(ctx, d.keys.Ready(s)).Val(), "nothing was scheduled")
	assert.Zero(t, tr.rdb.ZCard(ctx, d.keys.Queue(s, wh.ID)).Val(), "nothing was scheduled")
	assert.Zero(t, rc.count())
}

// Keys of the pre-release format (hash records beside claim keys, a zset index, the :sched schedule)
// are never read or changed: the two formats live under different names.
func TestOldFormatKeysAreLeftAlone(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	d, clock := newClockedDispatcher(t, tr, Options{RetrySchedule: []time.Duration{time.Minute}})
	rc := newReceiver(t)
	wh := mustCreate(t, d, rc, "*")
	id := deliveryIDFor(wh.ID, "old-e")
	s := shardOf("old-e")
	tag := d.keys.Tag(s)
	old := map[string]string{
		tag + ":dlv:" + rdb.DeliveryHash(id):   "hash",
		tag + ":claim:" + rdb.DeliveryHash(id): "string",
		tag + ":sched":                         "zset",
		tag + ":idx:" + wh.ID:                  "zset",
	}
	require.NoError(t, tr.rdb.HSet(ctx, tag+":dlv:"+rdb.DeliveryHash(id), "s", "pending", "l", "tok").Err())
	require.NoError(t, tr.rdb.Set(ctx, tag+":claim:"+rdb.DeliveryHash(id), 1, 0).Err())
	require.NoError(t, tr.rdb.ZAdd(ctx, tag+":sched", redis.Z{Score: 1, Member: id}).Err())
	require.NoError(t, tr.rdb.ZAdd(ctx, tag+":idx:"+wh.ID, redis.Z{Score: 1, Member: id}).Err())

	res, err := d.Dispatch(ctx, Event{Type: "a.b", ID: "old-e"})
	require.NoError(t, err)
	require.NoError(t, res[0].Err)
	assert.False(t, res[0].Duplicate)
	clock.Advance(time.Hour)
	_, err = d.ProcessDue(ctx)
	require.NoError(t, err)
	page, err := d.Deliveries().Page(ctx, wh.ID, DeliveryQuery{})
	require.NoError(t, err)
	require.Len(t, page.Deliveries, 1)
	for key, typ := range old {
		assert.Equal(t, typ, tr.rdb.Type(ctx, key).Val(), "%s untouched", key)
	}
	assert.Equal(t, float64(1), tr.rdb.ZScore(ctx, tag+":sched", id).Val())
	assert.Equal(t, "tok", tr.rdb.HGet(ctx, tag+":dlv:"+rdb.DeliveryHash(id), "l").Val())
}

// A listing that steps over index entries of another shape until its round bound ends a page hands out
// a cursor it accepts back, and the delivery behind them is listed once.
func TestCursorPastForeignIndexEntries(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	d := newTestDispatcher(t, tr, Options{})
	rc := newReceiver(t)
	wh := mustCreate(t, d, rc, "*")
	res, err := d.Dispatch(ctx, Event{Type: "a.b", ID: "e1"})
	require.NoError(t, err)
	require.NoError(t, res[0].Err)
	key := d.keys.Index((shardOf("e1")+1)%shardCount, wh.ID)
	for range 30 {
		require.NoError(t, tr.rdb.XAdd(ctx, &redis.XAddArgs{Stream: key, Values: []any{"d", "short", "x", "1"}}).Err())
	}
	got, pages := pageCollect(t, func(cursor string) (*DeliveryPage, error) {
		return d.Deliveries().Page(ctx, wh.ID, DeliveryQuery{Limit: 1, Cursor: cursor})
	}, nil)
	assert.Equal(t, []string{res[0].Delivery.ID}, got)
	assert.Greater(t, pages, 1, "the round bound ended a page early")
}

// A pending outcome is returned as stored: next attempt in whole milliseconds.
func TestPendingOutcomeReturnedAsStored(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	d := newTestDispatcher(t, tr, Options{RetrySchedule: []time.Duration{time.Minute}})
	rc := newReceiver(t)
	rc.status.Store(http.StatusInternalServerError)
	mustCreate(t, d, rc, "x")
	res, err := d.Dispatch(ctx, Event{Type: "x", ID: "p"})
	require.NoError(t, err)
	require.Equal(t, StatusPending, res[0].Delivery.Status)
	stored, err := d.Deliveries().Get(ctx, res[0].Delivery.ID)
	require.NoError(t, err)
	assert.Equal(t, stored, res[0].Delivery)
}

// A claim that fails on one target's index key deletes the index entries it appended for the others,
// so a later claim of those pairs in the same millisecond is listed once.
func TestFailedClaimLeavesNoIndexEntry(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	d, _ := newClockedDispatcher(t, tr, Options{}) // the clock stands still
	rc := newReceiver(t)
	w1 := mustCreate(t, d, rc, "*")
	w2 := mustCreate(t, d, rc, "*")
	s := shardOf("e1")
	require.NoError(t, tr.rdb.ZAdd(ctx, d.keys.Index(s, w2.ID), redis.Z{Score: 1, Member: "old"}).Err())
	res, err := d.Dispatch(ctx, Event{Type: "a.b", ID: "e1"})
	require.ErrorIs(t, err, ErrNotAccepted)
	for _, r := range res {
		require.Error(t, r.Err)
	}
	assert.Zero(t, tr.rdb.XLen(ctx, d.keys.Index(s, w1.ID)).Val(), "no entry left behind")
	require.NoError(t, tr.rdb.Del(ctx, d.keys.Index(s, w2.ID)).Err())
	res, err = d.Dispatch(ctx, Event{Type: "a.b", ID: "e1"})
	require.NoError(t, err)
	for _, r := range res {
		require.NoError(t, r.Err)
	}
	page, err := d.Deliveries().Page(ctx, w1.ID, DeliveryQuery{})
	require.NoError(t, err)
	assert.Len(t, page.Deliveries, 1, "listed once")
}
