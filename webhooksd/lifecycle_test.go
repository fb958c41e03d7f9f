package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smartdrop/webhooks"
)

// TestKillLosesNothing: under the load of TestEachEventOnce (8 clients, 2,000 events, each sent by
// two of them), the server is SIGKILLed at a random moment and the clients stop. Started again on the
// same Redis, it delivers every event the dead process answered 202, to each of its webhooks. Then the
// clients send every event again (as producers unsure of what got through do): every pair is then
// received, and a pair twice only when its attempt was in flight at the kill: the receiver answered it
// (within -timeout before the kill) but Redis, read after the kill, holds no success for it (its
// outcome was on its way), and the new process sent it again after the dead one's lease. How many
// were in flight so is not bounded by -concurrency: a slot goes to the next attempt while the
// outcome of the last is written (worker.RunSlots.start), so the test counts them and logs how many.
func TestKillLosesNothing(t *testing.T) {
	t.Parallel()
	addr := realRedis(t)
	const timeout, concurrency = 2 * time.Second, 16
	port, prefix := strconv.Itoa(sparePort()), "kill-"+randomHex(4)
	args := serverArgs(addr, prefix, "-timeout", timeout.String(), "-concurrency", strconv.Itoa(concurrency),
		"-retry-schedule", "200ms,200ms,200ms", "-listen", "127.0.0.1:"+port)
	srv := startServer(t, args)
	a := newAPI(t, func() string { return "http://127.0.0.1:" + port }, testKey)
	rc := newReceiver(t)
	rc.holdFor(func() time.Duration { return time.Duration(rand.IntN(30)) * time.Millisecond })
	allID, allSecret := a.createWebhook(rc.url("all"), []string{"*"}, "")
	ordersID, ordersSecret := a.createWebhook(rc.url("orders"), []string{"order.*"}, "")
	rc.setSecret("all", allSecret)
	rc.setSecret("orders", ordersSecret)

	const events, clients = 2000, 8
	pairsOf := func(i int) []string {
		if i%2 == 0 {
			return []string{fmt.Sprintf("all/evt-%d", i), fmt.Sprintf("orders/evt-%d", i)}
		}
		return []string{fmt.Sprintf("all/evt-%d", i)}
	}
	send := func(i int) (int, error) {
		typ := "invoice.paid"
		if i%2 == 0 {
			typ = "order.created"
		}
		status, _, _, err := a.do("POST", "/v1/events", map[string]any{"id": fmt.Sprintf("evt-%d", i), "type": typ,
			"data": map[string]any{"n": i}})
		return status, err
	}
	var mu sync.Mutex
	var acceptedByDead []string // the pairs of the events the dead process answered 202
	var nAccepted atomic.Int64
	var wg sync.WaitGroup
	for c := range clients {
		wg.Go(func() {
			for _, owner := range []int{c, (c + clients - 1) % clients} {
				for i := owner; i < events; i += clients {
					status, err := send(i)
					if err != nil {
						return // the server was killed: stop, as a producer whose server is gone
					}
					require.Equal(t, 202, status)
					mu.Lock()
					acceptedByDead = append(acceptedByDead, pairsOf(i)...)
					mu.Unlock()
					nAccepted.Add(1)
				}
			}
		})
	}
	killAfter := int64(300 + rand.IntN(2400))
	waitFor(t, "events accepted before the kill", func() (bool, int64) {
		n := nAccepted.Load()
		return n >= killAfter, n
	})
	killAt := time.Now()
	srv.signal(syscall.SIGKILL)
	assert.NotEqual(t, 0, srv.wait(), "killed")
	diedBy := time.Now() // the kill took effect between the signal and the wait's return
	wg.Wait()
	inFlight := unrecordedAnswers(t, rc, addr, prefix, map[string]string{"all": allID, "orders": ordersID})
	restartAt := time.Now()
	startServer(t, args)
	waitFor(t, "every event answered 202 by the dead process delivered", func() (bool, int64) {
		n := rc.received(acceptedByDead)
		return n == len(acceptedByDead), int64(n)
	})

	// Every event again, from the clients, to the new process.
	for c := range clients {
		wg.Go(func() {
			for i := c; i < events; i += clients {
				status, err := send(i)
				if assert.NoError(t, err) {
					assert.Equal(t, 202, status)
				}
			}
		})
	}
	wg.Wait()
	var want []string
	for i := range events {
		want = append(want, pairsOf(i)...)
	}
	waitFor(t, "every event delivered", func() (bool, int64) {
		n := rc.received(want)
		return n == len(want), int64(n)
	})
	waitFor(t, "nothing left to send", func() (bool, int64) { return backlogEmpty(a) })
	got := rc.snapshot()
	twice := 0
	for _, p := range want {
		r := got[p]
		if len(r) <= 1 {
			continue
		}
		twice++
		assert.Len(t, r, 2, "%s: received at most twice", p)
		assert.True(t, inFlight[p], "%s: received twice, so its attempt was in flight at the kill: answered, "+
			"its success not in Redis", p)
		assert.True(t, r[0].Before(diedBy) && r[0].After(killAt.Add(-timeout-time.Second)),
			"%s: received twice, so its first request was in flight at the kill (began %s before the signal, which took effect within %s)",
			p, killAt.Sub(r[0]), diedBy.Sub(killAt))
		assert.True(t, r[1].After(restartAt), "%s: the second time by the new process", p)
	}
	assert.Empty(t, rc.badSignatures())
	t.Logf("killed after %d of %d sends answered 202 (%d pairs); %d pairs answered with no success in Redis at the kill, "+
		"%d of %d pairs received twice", nAccepted.Load(), 2*events, len(acceptedByDead), len(inFlight), twice, len(want))
}

// unrecordedAnswers waits until rc has ended every request it began (those of a killed server end
// cut short, unrecorded), then returns the pairs rc answered whose deliveries Redis (at addr, under
// prefix, read through the library) holds as not succeeded: the attempts in flight at a kill whose
// answers arrived, or would have. webhookIDs maps rc's webhook names to their ids.
func unrecordedAnswers(t *testing.T, rc *receiver, addr, prefix string, webhookIDs map[string]string) map[string]bool {
	t.Helper()
	waitFor(t, "the receiver's requests ended", func() (bool, int64) {
		started := rc.started.Load()
		return rc.done.Load()+rc.cut.Load() == started, started
	})
	client := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { _ = client.Close() })
	d, err := webhooks.New(client, webhooks.Options{KeyPrefix: prefix})
	require.NoError(t, err)
	succeeded := map[string]bool{}
	for name, id := range webhookIDs { // every retained delivery of each webhook, a page of 500 a round trip
		list, err := d.Deliveries().List(context.Background(), id, 1<<20)
		require.NoError(t, err, name)
		for _, del := range list {
			succeeded[name+"/"+del.EventID] = del.Status == webhooks.StatusSuccess
		}
	}
	out := map[string]bool{}
	for p := range rc.snapshot() {
		done, found := succeeded[p]
		require.True(t, found, "%s: answered by the receiver, so its delivery is in Redis", p)
		if !done {
			out[p] = true
		}
	}
	return out
}

// TestTermFinishesAttempts: SIGTERM while 8 clients send events and a slow receiver holds attempts
// (1 to 2.5 s each): the server answers ingest 503 (shutting_down) after the signal, lets every
// attempt in flight end (the receiver answers every request it began, none cut short), and exits 0
// within -timeout + 2 s. Started again, it delivers every event that got a 202, each pair once.
func TestTermFinishesAttempts(t *testing.T) {
	t.Parallel()
	addr := realRedis(t)
	const timeout = 5 * time.Second
	args := serverArgs(addr, "term-"+randomHex(4), "-timeout", timeout.String(), "-concurrency", "16")
	srv := startServer(t, args)
	var base atomic.Value
	base.Store("http://" + srv.addr)
	a := newAPI(t, func() string { return base.Load().(string) }, testKey)
	rc := newReceiver(t)
	rc.holdFor(func() time.Duration { return time.Second + time.Duration(rand.IntN(1500))*time.Millisecond })
	_, secret := a.createWebhook(rc.url("all"), []string{"*"}, "")
	rc.setSecret("all", secret)

	type answer struct {
		id         string
		status     int
		code       string
		sent, done time.Time
	}
	var mu sync.Mutex
	var answers []answer
	var stop atomic.Bool
	var wg sync.WaitGroup
	var next atomic.Int64
	for range 8 {
		wg.Go(func() {
			for !stop.Load() {
				id := "evt-" + strconv.FormatInt(next.Add(1), 10)
				sent := time.Now()
				status, out, _, err := a.do("POST", "/v1/events", map[string]any{"id": id, "type": "order.created"})
				if err != nil { // the server is gone
					return
				}
				var ans ingestAnswer
				_ = json.Unmarshal(out, &ans)
				code := ""
				if ans.Error != nil {
					code = ans.Error.Code
				}
				mu.Lock()
				answers = append(answers, answer{id: id, status: status, code: code, sent: sent, done: time.Now()})
				mu.Unlock()
				time.Sleep(5 * time.Millisecond)
			}
		})
	}
	waitFor(t, "attempts in flight", func() (bool, int64) { return rc.started.Load() >= 24, rc.started.Load() })
	termAt := time.Now()
	srv.signal(syscall.SIGTERM)
	code := srv.wait()
	took := time.Since(termAt)
	stop.Store(true)
	wg.Wait()
	assert.Equal(t, 0, code, "exit code after SIGTERM")
	assert.LessOrEqual(t, took, timeout+2*time.Second, "SIGTERM to exit")
	assert.Zero(t, rc.cut.Load(), "no attempt cut short")
	assert.Equal(t, rc.started.Load(), rc.done.Load(), "the receiver answered every request it began")

	var accepted []string
	refused, firstRefusal := 0, time.Time{}
	for _, an := range answers {
		switch {
		case an.status == 202:
			accepted = append(accepted, "all/"+an.id)
		case an.status == 503 && an.code == "shutting_down":
			refused++
			if firstRefusal.IsZero() || an.done.Before(firstRefusal) {
				firstRefusal = an.done
			}
		default:
			t.Errorf("%s: %d %s", an.id, an.status, an.code)
		}
	}
	assert.Positive(t, refused, "ingest answered 503 shutting_down after the signal")
	for _, an := range answers {
		if an.status == 202 && !firstRefusal.IsZero() {
			assert.True(t, an.sent.Before(firstRefusal), "%s: accepted although sent after a refusal", an.id)
		}
	}

	// No attempt began after the signal reached the server (the worker starts none once stopping).
	late := 0
	for _, r := range rc.snapshot() {
		for _, began := range r {
			if began.After(termAt.Add(250 * time.Millisecond)) {
				late++
			}
		}
	}
	assert.Zero(t, late, "attempts begun after SIGTERM")

	srv2 := startServer(t, args)
	base.Store("http://" + srv2.addr)
	rc.holdFor(func() time.Duration { return 0 })
	waitFor(t, "every accepted event delivered", func() (bool, int64) {
		n := rc.received(accepted)
		return n == len(accepted), int64(n)
	})
	waitFor(t, "nothing left to send", func() (bool, int64) { return backlogEmpty(a) })
	got := rc.snapshot()
	for _, p := range accepted {
		assert.Len(t, got[p], 1, "%s received once", p)
	}
	t.Logf("SIGTERM to exit %s (timeout %s); %d requests answered by the receiver; %d events accepted, %d refused while shutting down",
		took.Round(time.Millisecond), timeout, rc.done.Load(), len(accepted), refused)
}
