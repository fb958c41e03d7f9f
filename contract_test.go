package webhooks

// Tests of the error contract of Dispatch and SendTest (see Result's doc and errors.go): a call whose
// error is nil has a Delivery in every Result; a target that could not be claimed has none, and the
// call's error wraps ErrNotAccepted; an outcome that could not be written wraps ErrDeferred and keeps
// its Delivery. And ErrConflict for a registry change that keeps losing races.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/smartdrop/webhooks/internal/eventtypes"
	"github.com/smartdrop/webhooks/internal/rdb"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// isScript reports whether cmd runs script, by EVALSHA (its hash) or EVAL (its source): the scripts
// of the package are told apart by their SHA1.
func isScript(cmd redis.Cmder, script *redis.Script) bool {
	args := cmd.Args()
	if len(args) < 2 {
		return false
	}
	switch strings.ToLower(fmt.Sprint(args[0])) {
	case "evalsha", "evalsha_ro":
		return args[1] == script.Hash()
	case "eval", "eval_ro":
		return redis.NewScript(fmt.Sprint(args[1])).Hash() == script.Hash()
	}
	return false
}

// failScript fails, without sending them, the runs of one script while armed, alone or inside a
// pipeline (the script batcher pipelines concurrent calls); every other command passes.
type failScript struct {
	passHook
	script *redis.Script
	err    error
	armed  atomic.Bool
	failed atomic.Int32
}

func newFailScript(script *redis.Script, err error) *failScript {
	h := &failScript{script: script, err: err}
	h.armed.Store(true)
	return h
}

func (h *failScript) hit(cmd redis.Cmder) bool {
	if h.armed.Load() && isScript(cmd, h.script) {
		h.failed.Add(1)
		cmd.SetErr(h.err)
		return true
	}
	return false
}

func (h *failScript) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if h.hit(cmd) {
			return h.err
		}
		return next(ctx, cmd)
	}
}

func (h *failScript) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		var pass []redis.Cmder
		for _, c := range cmds {
			if !h.hit(c) {
				pass = append(pass, c)
			}
		}
		if len(pass) == 0 {
			return h.err
		}
		if err := next(ctx, pass); err != nil {
			return err
		}
		if len(pass) < len(cmds) {
			return h.err
		}
		return nil
	}
}

// cutProxy forwards TCP to a Redis until cut, which closes its listener and every connection: the
// server is gone as far as its clients can tell.
type cutProxy struct {
	ln    net.Listener
	mu    sync.Mutex
	conns []net.Conn
	cut   bool
}

func newCutProxy(t *testing.T, target string) *cutProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &cutProxy{ln: ln}
	t.Cleanup(p.Cut)
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
			p.mu.Lock()
			if p.cut {
				p.mu.Unlock()
				cc.Close()
				sc.Close()
				return
			}
			p.conns = append(p.conns, cc, sc)
			p.mu.Unlock()
			go func() { _, _ = io.Copy(sc, cc); sc.Close() }()
			go func() { _, _ = io.Copy(cc, sc); cc.Close() }()
		}
	}()
	return p
}

func (p *cutProxy) Addr() string { return p.ln.Addr().String() }

// Cut drops every connection and refuses new ones.
func (p *cutProxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = true
	_ = p.ln.Close()
	for _, c := range p.conns {
		_ = c.Close()
	}
	p.conns = nil
}

// redisAddr is the address of the test's Redis server (miniredis or WEBHOOKS_REDIS_ADDR); it skips
// the test on a cluster.
func (tr *testRedis) redisAddr(t *testing.T) string {
	t.Helper()
	if tr.isCluster() {
		t.Skip("needs one server address; not on a cluster")
	}
	if tr.mini != nil {
		return tr.mini.Addr()
	}
	return os.Getenv("WEBHOOKS_REDIS_ADDR")
}

// pinSubscribers resolves evtType's subscribers now and keeps them cached for an hour, and the
// catalog of event types too, so that a call after Redis fails gets as far as the claim.
func pinSubscribers(t *testing.T, d *Dispatcher, evtType string, want int) {
	t.Helper()
	subs, err := d.webhooks.subscribers(context.Background(), "", evtType)
	require.NoError(t, err)
	require.Len(t, subs, want)
	d.webhooks.mu.Lock()
	d.webhooks.cache["\x00"+evtType] = subscriberEntry{at: d.now().Add(time.Hour), list: subs} // the key of tenant "" (registry_cache.go)
	d.webhooks.mu.Unlock()
	d.eventTypes.cache = eventtypes.New(d.rdb, d.keys, time.Hour, func() time.Time { return d.now() })
	d.events.Catalog = d.eventTypes.cache // the catalog the Dispatches check events against
	_, err = d.eventTypes.cache.Get(context.Background(), false)
	require.NoError(t, err)
}

// requireNotAccepted checks the contract of a Dispatch none of whose targets could be claimed.
func requireNotAccepted(t *testing.T, res []Result, err error, targets int) {
	t.Helper()
	require.ErrorIs(t, err, ErrNotAccepted)
	require.Len(t, res, targets, "the Results come with ErrNotAccepted")
	for _, r := range res {
		assert.NotEmpty(t, r.WebhookID)
		assert.Nil(t, r.Delivery, "an unclaimed target has no Delivery")
		assert.False(t, r.Accepted())
		assert.False(t, r.Duplicate)
		require.Error(t, r.Err, "an unclaimed target says why")
		assert.NotErrorIs(t, r.Err, ErrDeferred, "not claimed is not deferred")
		assert.ErrorIs(t, err, r.Err, "each target's cause is joined in the call's error")
	}
}

// redispatchIsFresh checks that nothing was recorded for evt: dispatched again on a healthy client,
// every target is claimed afresh (not a duplicate) and sent once.
func redispatchIsFresh(t *testing.T, tr *testRedis, rc *receiver, evt Event, targets int) {
	t.Helper()
	before := rc.count()
	d := newTestDispatcher(t, tr, Options{})
	res, err := d.Dispatch(context.Background(), evt)
	require.NoError(t, err)
	require.Len(t, res, targets)
	for _, r := range res {
		require.NoError(t, r.Err)
		assert.False(t, r.Duplicate, "the failed call recorded nothing")
		assert.Equal(t, StatusSuccess, r.Delivery.Status)
	}
	assert.Equal(t, before+targets, rc.count(), "sent once per target, now")
}

// TestRedisFailsMidDispatchNotAccepted: Redis fails after the subscribers are known, so the claim
// fails. Dispatch's error wraps ErrNotAccepted, every Result has a nil Delivery and its own cause,
// nothing is sent or recorded, and dispatching the event again delivers it.
func TestRedisFailsMidDispatchNotAccepted(t *testing.T) {
	t.Parallel()
	const targets = 3
	cases := []struct {
		name  string
		cause error // what each target's error wraps, when known
		// client returns the Dispatcher's client and the function that fails Redis under it.
		client func(t *testing.T, tr *testRedis) (redis.UniversalClient, func())
	}{
		{"closed client", redis.ErrClosed, func(t *testing.T, tr *testRedis) (redis.UniversalClient, func()) {
			c := tr.newClient(t)
			return c, func() { require.NoError(t, c.Close()) }
		}},
		{"dropped connection", nil, func(t *testing.T, tr *testRedis) (redis.UniversalClient, func()) {
			p := newCutProxy(t, tr.redisAddr(t))
			c := redis.NewClient(&redis.Options{Addr: p.Addr(), DialTimeout: 500 * time.Millisecond})
			t.Cleanup(func() { _ = c.Close() })
			return c, p.Cut
		}},
		{"claim script fails in transport", io.ErrUnexpectedEOF, func(t *testing.T, tr *testRedis) (redis.UniversalClient, func()) {
			c := tr.newClient(t)
			h := newFailScript(rdb.Claim, io.ErrUnexpectedEOF)
			h.armed.Store(false)
			c.AddHook(h)
			return c, func() { h.armed.Store(true) }
		}},
		{"claim script refused", errors.New("ERR injected script error"), nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			tr := newTestRedis(t)
			var c redis.UniversalClient
			var fail func()
			if tc.client != nil {
				c, fail = tc.client(t, tr)
			} else {
				c = tr.newClient(t)
				h := newFailScript(rdb.Claim, tc.cause)
				h.armed.Store(false)
				c.AddHook(h)
				fail = func() { h.armed.Store(true) }
			}
			d := newTestDispatcherOn(t, c, tr, Options{})
			rc := newReceiver(t)
			for range targets {
				mustCreate(t, d, rc, "m.*")
			}
			pinSubscribers(t, d, "m.x", targets)
			fail()

			evt := Event{Type: "m.x", ID: "mid-" + tc.name}
			res, err := d.Dispatch(ctx, evt)
			requireNotAccepted(t, res, err, targets)
			for _, r := range res {
				if tc.cause != nil {
					assert.ErrorIs(t, r.Err, tc.cause)
				} else {
					assert.True(t, rdb.IsTransient(r.Err), "a transport error: %v", r.Err)
				}
			}
			assert.Equal(t, 0, rc.count(), "nothing is sent without a claim")
			redispatchIsFresh(t, tr, rc, evt, targets)
		})
	}
}

// TestSendTestNotAcceptedWhenClaimFails: SendTest's error wraps ErrNotAccepted, with no Delivery, when
// the test delivery cannot be claimed.
func TestSendTestNotAcceptedWhenClaimFails(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	c := tr.newClient(t)
	h := newFailScript(rdb.Claim, io.ErrUnexpectedEOF)
	c.AddHook(h)
	d := newTestDispatcherOn(t, c, tr, Options{})
	rc := newReceiver(t)
	w := mustCreate(t, d, rc, "x")
	dl, err := d.SendTest(ctx, w.ID)
	require.ErrorIs(t, err, ErrNotAccepted)
	require.ErrorIs(t, err, io.ErrUnexpectedEOF, "the cause is joined")
	assert.Nil(t, dl)
	assert.Positive(t, h.failed.Load())
	assert.Equal(t, 0, rc.count())
}

// TestEveryAcceptedResultHasADelivery runs Dispatch (and SendTest) through the situations a target can
// meet once claimed. Whenever the call's error is nil, every Result has a Delivery; an attempt that
// was cut short by the caller or whose outcome could not be written wraps ErrDeferred, keeps its
// Delivery, and is delivered by a worker after its lease.
func TestEveryAcceptedResultHasADelivery(t *testing.T) {
	t.Parallel()
	const targets = 2
	const timeout = 300 * time.Millisecond
	type env struct {
		d        *Dispatcher
		rc       *receiver
		outcomes *failScript // fails the outcome script when armed
	}
	cases := []struct {
		name string
		// run sets the situation up and dispatches; it returns the call's results and error.
		run      func(t *testing.T, e env, evt Event) ([]Result, error)
		status   Status // the Delivery's status
		dup      bool
		deferred bool // each Result's Err wraps ErrDeferred
	}{
		{name: "fresh", status: StatusSuccess, run: func(t *testing.T, e env, evt Event) ([]Result, error) {
			return e.d.Dispatch(context.Background(), evt)
		}},
		{name: "duplicate", status: StatusSuccess, dup: true, run: func(t *testing.T, e env, evt Event) ([]Result, error) {
			_, err := e.d.Dispatch(context.Background(), evt)
			require.NoError(t, err)
			return e.d.Dispatch(context.Background(), evt)
		}},
		{name: "receiver 500", status: StatusPending, run: func(t *testing.T, e env, evt Event) ([]Result, error) {
			e.rc.status.Store(http.StatusInternalServerError)
			return e.d.Dispatch(context.Background(), evt)
		}},
		{name: "receiver hangs past Timeout", status: StatusPending, run: func(t *testing.T, e env, evt Event) ([]Result, error) {
			e.rc.setHook(func(r *http.Request) {
				select {
				case <-r.Context().Done():
				case <-time.After(10 * timeout):
				}
			})
			return e.d.Dispatch(context.Background(), evt)
		}},
		{name: "context cancelled mid-attempt", status: StatusPending, deferred: true, run: func(t *testing.T, e env, evt Event) ([]Result, error) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var arrived atomic.Int32
			e.rc.setHook(func(r *http.Request) {
				if arrived.Add(1) == targets {
					cancel() // every attempt is in flight
				}
				<-r.Context().Done()
			})
			return e.d.Dispatch(ctx, evt)
		}},
		{name: "outcome write fails", status: StatusPending, deferred: true, run: func(t *testing.T, e env, evt Event) ([]Result, error) {
			e.outcomes.armed.Store(true)
			return e.d.Dispatch(context.Background(), evt)
		}},
		{name: "duplicate of a deferred outcome", status: StatusPending, dup: true, run: func(t *testing.T, e env, evt Event) ([]Result, error) {
			e.outcomes.armed.Store(true)
			_, err := e.d.Dispatch(context.Background(), evt)
			require.NoError(t, err)
			e.outcomes.armed.Store(false)
			return e.d.Dispatch(context.Background(), evt)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			tr := newTestRedis(t)
			c := tr.newClient(t)
			outcomes := newFailScript(rdb.Outcome, io.ErrUnexpectedEOF)
			outcomes.armed.Store(false)
			c.AddHook(outcomes)
			clock := newTestClock()
			d := newTestDispatcherOn(t, c, tr, Options{Timeout: timeout, RetrySchedule: []time.Duration{time.Minute}})
			d.now = clock.Now
			rc := newReceiver(t)
			for range targets {
				mustCreate(t, d, rc, "c.*")
			}
			evt := Event{Type: "c.x", ID: "contract-" + tc.name}

			res, err := tc.run(t, env{d: d, rc: rc, outcomes: outcomes}, evt)
			require.NoError(t, err, "every target was claimed")
			require.Len(t, res, targets)
			ids := map[string]bool{}
			for _, r := range res {
				require.NotNil(t, r.Delivery, "a nil error means every Result has a Delivery")
				assert.True(t, r.Accepted())
				assert.Equal(t, r.WebhookID, r.Delivery.WebhookID)
				assert.Equal(t, evt.ID, r.Delivery.EventID)
				assert.Equal(t, tc.status, r.Delivery.Status)
				assert.Equal(t, tc.dup, r.Duplicate)
				if tc.deferred {
					assert.ErrorIs(t, r.Err, ErrDeferred, "an attempt not recorded is deferred, not lost")
				} else {
					assert.NoError(t, r.Err)
				}
				stored, err := d.Deliveries().Get(ctx, r.Delivery.ID)
				require.NoError(t, err, "the Delivery is recorded")
				assert.Equal(t, r.Delivery.ID, stored.ID)
				ids[r.Delivery.ID] = true
			}
			assert.Len(t, ids, targets, "one Delivery per target")
			if !tc.deferred {
				return
			}
			// Deferred: once the lease has expired a worker sends it again and records it.
			outcomes.armed.Store(false)
			rc.setHook(func(*http.Request) {})
			rc.status.Store(http.StatusOK)
			clock.Advance(d.lease + time.Second)
			n, err := d.ProcessDue(ctx)
			require.NoError(t, err)
			assert.Equal(t, targets, n, "a worker attempts each deferred delivery")
			for _, r := range res {
				stored, err := d.Deliveries().Get(ctx, r.Delivery.ID)
				require.NoError(t, err)
				assert.Equal(t, StatusSuccess, stored.Status)
			}
		})
	}
}

// TestSendTestOutcomeWriteFailsIsDeferred: SendTest whose outcome cannot be written returns the
// Delivery with an error wrapping ErrDeferred, not ErrNotAccepted.
func TestSendTestOutcomeWriteFailsIsDeferred(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	c := tr.newClient(t)
	h := newFailScript(rdb.Outcome, io.ErrUnexpectedEOF)
	c.AddHook(h)
	d := newTestDispatcherOn(t, c, tr, Options{})
	rc := newReceiver(t)
	w := mustCreate(t, d, rc, "x")
	dl, err := d.SendTest(ctx, w.ID)
	require.ErrorIs(t, err, ErrDeferred)
	require.ErrorIs(t, err, io.ErrUnexpectedEOF)
	assert.NotErrorIs(t, err, ErrNotAccepted, "the test delivery is accepted")
	require.NotNil(t, dl, "a deferred delivery comes with its Delivery")
	assert.Equal(t, w.ID, dl.WebhookID)
	assert.Equal(t, StatusPending, dl.Status)
	assert.Positive(t, h.failed.Load())
	assert.Equal(t, 1, rc.count(), "the attempt was made")
	stored, err := d.Deliveries().Get(ctx, dl.ID)
	require.NoError(t, err)
	assert.Equal(t, StatusPending, stored.Status)
}

// rivalOnRead is a go-redis hook on a loser's client: every time the loser reads the webhook (the
// read of a read-modify-write), a rival, on another client, changes it, so the loser's write always
// finds the webhook changed under it.
type rivalOnRead struct {
	passHook
	key   string
	rival func()
	reads atomic.Int32
}

func (h *rivalOnRead) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		args := cmd.Args()
		if err == nil && len(args) > 1 && strings.EqualFold(fmt.Sprint(args[0]), "hget") && args[1] == h.key {
			h.reads.Add(1)
			h.rival()
		}
		return err
	}
}

// TestRegistryChangeLosingEveryRaceIsErrConflict: Update, RotateSecret and Delete that lose the race to
// another writer on every try give up with an error wrapping ErrConflict, having written nothing.
func TestRegistryChangeLosingEveryRaceIsErrConflict(t *testing.T) {
	t.Parallel()
	calls := []struct {
		name string
		call func(ctx context.Context, r *WebhookRepo, w *Webhook) error
	}{
		{"Update", func(ctx context.Context, r *WebhookRepo, w *Webhook) error {
			w.Events = []string{"loser.*"}
			_, err := r.Update(ctx, *w)
			return err
		}},
		{"RotateSecret", func(ctx context.Context, r *WebhookRepo, w *Webhook) error {
			_, err := r.RotateSecret(ctx, w.ID, time.Hour)
			return err
		}},
		{"Delete", func(ctx context.Context, r *WebhookRepo, w *Webhook) error {
			return r.Delete(ctx, w.ID)
		}},
	}
	for _, tc := range calls {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			tr := newTestRedis(t)
			winner := newTestDispatcher(t, tr, Options{})
			rc := newReceiver(t)
			w := mustCreate(t, winner, rc, "a.*")
			var wins atomic.Int32
			hook := &rivalOnRead{key: winner.keys.Webhooks(), rival: func() {
				n := wins.Add(1)
				_, err := winner.Webhooks().Update(ctx, Webhook{ID: w.ID, URL: w.URL, Events: []string{fmt.Sprintf("rival%d.*", n)}})
				require.NoError(t, err)
			}}
			c := tr.newClient(t)
			c.AddHook(hook)
			loser := newTestDispatcherOn(t, c, tr, Options{})

			err := tc.call(ctx, loser.Webhooks(), w)
			require.ErrorIs(t, err, ErrConflict, "losing every race is a conflict")
			assert.EqualValues(t, maxSaveTries, hook.reads.Load(), "it tried maxSaveTries times")
			got, err := winner.Webhooks().Get(ctx, w.ID)
			require.NoError(t, err, "the loser wrote nothing")
			assert.Equal(t, []string{fmt.Sprintf("rival%d.*", wins.Load())}, got.Events, "the last rival's change stands")
			assert.Equal(t, w.Secret, got.Secret, "the loser wrote nothing")

			// Without the rival the same call goes through.
			hook.rival = func() {}
			require.NoError(t, tc.call(ctx, loser.Webhooks(), got))
		})
	}
}
