package webhooks

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/smartdrop/webhooks/internal/rdb"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// keySlot is the Redis Cluster hash slot of a key: CRC16 (XMODEM) of the key, or of its hash tag (the
// part between the first '{' and the first '}' after it, when not empty), mod 16384.
func keySlot(key string) int {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			key = key[i+1 : i+1+j]
		}
	}
	var crc uint16
	for k := 0; k < len(key); k++ {
		crc ^= uint16(key[k]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return int(crc) % 16384
}

func TestKeySlotMatchesRedis(t *testing.T) {
	t.Parallel()
	// Values from the Redis Cluster specification and CLUSTER KEYSLOT.
	assert.Equal(t, 12739, keySlot("123456789"))
	assert.Equal(t, keySlot("user1000"), keySlot("{user1000}.following"))
	assert.Equal(t, keySlot("{}x"), keySlot("{}x")) // an empty tag hashes the whole key
	assert.NotEqual(t, keySlot("{}a"), keySlot("{}b"))
}

// scriptKeys records the keys of every script call a client makes.
type scriptKeys struct {
	passHook
	mu    sync.Mutex
	calls map[string][][]string // script hash -> key lists
}

func (s *scriptKeys) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		s.record(cmd)
		return next(ctx, cmd)
	}
}
func (s *scriptKeys) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, c := range cmds {
			s.record(c)
		}
		return next(ctx, cmds)
	}
}

func (s *scriptKeys) record(cmd redis.Cmder) {
	args := cmd.Args()
	name := strings.ToLower(fmt.Sprint(args[0]))
	if (name != "evalsha" && name != "eval") || len(args) < 3 {
		return
	}
	hash := fmt.Sprint(args[1])
	if name == "eval" {
		hash = redis.NewScript(hash).Hash()
	}
	n := 0
	fmt.Sscan(fmt.Sprint(args[2]), &n)
	keys := make([]string, 0, n)
	for _, k := range args[3 : 3+n] {
		keys = append(keys, fmt.Sprint(k))
	}
	s.mu.Lock()
	s.calls[hash] = append(s.calls[hash], keys)
	s.mu.Unlock()
}

// randomID makes an id with characters that could break naive key tagging.
func randomID(r *rand.Rand) string {
	const alphabet = "abcXYZ019:{}-_ .é事/\\*?[]"
	runes := []rune(alphabet)
	var b strings.Builder
	for range 1 + r.IntN(24) {
		b.WriteRune(runes[r.IntN(len(runes))])
	}
	return b.String()
}

// TestEveryScriptIsSingleSlot drives every script of the library with many random ids (40 events; 100
// with WEBHOOKS_LONG_TESTS) and checks that each call's keys hash to one Redis Cluster slot, and that no
// script runs inside a pipeline.
func TestEveryScriptIsSingleSlot(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	rec := &scriptKeys{calls: map[string][][]string{}}
	client := tr.newClient(t)
	client.AddHook(rec)
	clock := newTestClock()
	d := newTestDispatcherOn(t, client, tr, Options{RetrySchedule: []time.Duration{time.Minute}, ReplayIndex: true})
	fresh, err := New(client, Options{KeyPrefix: tr.prefix})
	require.NoError(t, err)
	require.NoError(t, loadKeys(ctx, fresh.keys, client)) // the layout script, on the recorded client
	d.now = clock.Now
	rc := newReceiver(t)
	rc.status.Store(http.StatusInternalServerError)
	var hooks []*Webhook
	for _, p := range []string{"slot.*", "*", "slot.test"} {
		hooks = append(hooks, mustCreate(t, d, rc, p))
	}
	r := rand.New(rand.NewPCG(1, 2))
	var ids, orderKeys []string
	for seen, n := map[string]bool{}, sized(40, 100); len(ids) < n; {
		id := randomID(r)
		if seen[id] { // an id dispatched again with another order key is refused
			continue
		}
		seen[id] = true
		key := "" // half ordered, on a few keys: some deliveries wait behind their key's head
		if len(ids)%2 == 1 {
			key = "k" + randomID(rand.New(rand.NewPCG(3, uint64(len(ids)%10))))
		}
		ids, orderKeys = append(ids, id), append(orderKeys, key)
	}
	// Concurrent callers, so that scripts also run batched in pipelines.
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := w; i < len(ids); i += 8 {
				res, err := d.Dispatch(ctx, Event{Type: "slot.test", ID: ids[i], OrderKey: orderKeys[i]})
				if assert.NoError(t, err) {
					for _, x := range res {
						if x.Err != nil {
							assert.ErrorIs(t, x.Err, ErrDeferred) // queued behind its key's head
						}
					}
				}
			}
		})
	}
	wg.Wait()
	// Each unordered event again: a duplicate, read by the Dispatcher that claimed it (find_duplicates).
	for i, id := range ids {
		if orderKeys[i] == "" {
			res, err := d.Dispatch(ctx, Event{Type: "slot.test", ID: id})
			require.NoError(t, err)
			for _, x := range res {
				assert.True(t, x.Duplicate, "event %q", id)
			}
		}
	}
	// Events no webhook takes are stored and indexed for replay; a replay claims them.
	for _, id := range ids[:10] {
		_, err := d.Enqueue(ctx, Event{Type: "none.taken", ID: id + "-none", Tenant: "t1"})
		require.NoError(t, err)
	}
	replayer, err := d.Webhooks().Create(ctx, Webhook{URL: rc.srv.URL, Events: []string{"none.*"}, Tenant: "t1"})
	require.NoError(t, err)
	n, err := d.ReplayMissing(ctx, replayer.ID, time.Time{})
	require.NoError(t, err)
	require.Equal(t, 10, n)
	// A corrupt record exercises the unschedule script.
	s := shardOf(ids[0])
	corrupt := fmt.Sprintf("dlv_%02x%024d", s, 7)
	require.NoError(t, tr.rdb.Set(ctx, d.keys.Delivery(s, corrupt), strings.Repeat("junk", 10), 0).Err())
	require.NoError(t, tr.rdb.ZAdd(ctx, d.keys.Queue(s, hooks[0].ID), redis.Z{Score: 1, Member: corrupt}).Err())
	require.NoError(t, tr.rdb.ZAdd(ctx, d.keys.Ready(s), redis.Z{Score: 1, Member: hooks[0].ID}).Err())
	// An inline attempt whose lease ended with no outcome exercises the adopt script.
	stray := fmt.Sprintf("dlv_%02x%024d", s, 8)
	require.NoError(t, tr.rdb.ZAdd(ctx, d.keys.Inline(s), redis.Z{Score: 1, Member: rdb.InlineEntry(stray, hooks[0].ID)}).Err())

	for range 20 { // each round's final heads let their keys' next deliveries go on
		clock.Advance(2 * time.Minute)
		for range 20 {
			n, _ := d.ProcessDue(ctx)
			if n == 0 {
				break
			}
		}
	}
	rc.status.Store(http.StatusOK)
	for _, id := range ids[:20] {
		dl, err := d.Deliveries().Find(ctx, hooks[0].ID, id)
		require.NoError(t, err)
		require.Equal(t, StatusFailed, dl.Status)
		// Recover's unbounded resend: 20 resends to one webhook at once pass Redeliver's bound
		// (ActionsPerWebhook), which this test of the scripts' keys does not exercise.
		_, _, err = d.resend.Redeliver(ctx, dl.ID, false)
		if err != nil {
			require.ErrorIs(t, err, ErrDeferred) // an ordered one behind another redelivered one
		}
	}
	_, err = d.Webhooks().RotateSecret(ctx, hooks[1].ID, time.Hour)
	require.NoError(t, err)
	require.NoError(t, d.Webhooks().Delete(ctx, hooks[2].ID))

	// An OAuth2 webhook: its token fetched under the lock, then dropped on a 401 and fetched again.
	ts := newTokenServer(t, "slot-client", "slot-secret", 3600)
	endpoint, _ := ts.endpoint(t)
	_, err = d.Webhooks().Create(ctx, Webhook{URL: endpoint.URL, Events: []string{"slot.oauth"},
		Auth: &EndpointAuth{OAuth2: &OAuth2ClientCredentials{TokenURL: ts.srv.URL, ClientID: "slot-client", ClientSecret: "slot-secret"}}})
	require.NoError(t, err)
	for _, id := range []string{"oauth-1", "oauth-2"} { // fresh ids: an id names one event (ErrEventConflict)
		_, err = d.Dispatch(ctx, Event{Type: "slot.oauth", ID: id})
		require.NoError(t, err)
		ts.revokeAll()
	}

	// Probe now on an open circuit: its end in the registry, then the parked deliveries of each shard.
	prober := mustCreate(t, d, rc, "slot.probe")
	rc.status.Store(http.StatusInternalServerError) // their first attempts fail: retries wait in the queues
	for _, id := range ids[:20] {
		_, err := d.Dispatch(ctx, Event{Type: "slot.probe", ID: id + "-probe"})
		require.NoError(t, err)
	}
	open := fmt.Sprintf("3:%d:%d:%d:0:0:0::", clock.Now().UnixMilli(), clock.Now().Add(time.Hour).UnixMilli(), time.Hour.Milliseconds())
	require.NoError(t, tr.rdb.HSet(ctx, d.keys.Circuits(), prober.ID, open).Err())
	_, n, err = d.admin.Probe(ctx, prober.ID)
	require.NoError(t, err)
	require.Positive(t, n)

	// A probe taken for a ready entry left behind an emptied queue, given back (a Dispatcher with the
	// breaker on).
	breaker := newTestDispatcherOn(t, client, tr, Options{BreakAfter: DefaultBreakAfter})
	breaker.now = clock.Now
	unused := mustCreate(t, d, rc, "slot.unused")
	past := fmt.Sprintf("3:%d:%d:%d:0:0:0::", clock.Now().UnixMilli(), clock.Now().Add(-time.Second).UnixMilli(), time.Hour.Milliseconds())
	require.NoError(t, tr.rdb.HSet(ctx, d.keys.Circuits(), unused.ID, past).Err())
	require.NoError(t, tr.rdb.ZAdd(ctx, d.keys.Ready(d.keys.ShardOf(ids[0])), redis.Z{Score: 1, Member: unused.ID}).Err())
	_, err = breaker.ProcessDue(ctx)
	require.NoError(t, err)

	// The catalog of event types: a type created, and the catalog read by the Dispatches' cache.
	_, err = d.EventTypes().Create(ctx, EventType{Name: "slot.typed", Schema: json.RawMessage(`{"type": "object"}`)})
	require.NoError(t, err)
	_, err = d.Dispatch(ctx, Event{Type: "slot.typed", ID: "typed-1", Data: map[string]int{"n": 1}})
	require.NoError(t, err)

	names := map[string]*redis.Script{
		"eventTypes": rdb.EventTypes, "saveEventType": rdb.SaveEventType,
		"probeNow": rdb.ProbeNow, "wakeParked": rdb.WakeParked, "releaseProbe": rdb.ReleaseProbe, "acquireProbe": rdb.AcquireProbe,
		"claim": rdb.Claim, "findDuplicates": rdb.FindDuplicates, "outcome": rdb.Outcome, "lease": rdb.Lease, "unschedule": rdb.Unschedule,
		"redeliver": rdb.Redeliver, "adopt": rdb.Adopt, "saveWebhook": rdb.SaveWebhook, "layout": rdb.ShardCount,
		"circuitCount":    rdb.Count,           // every attempt's outcome is counted in its webhook's circuit
		"indexedWebhooks": rdb.IndexedWebhooks, // resolving subscribers, listing a tenant
		"orderedClaim":    rdb.OrderedClaim, "orderedOutcome": rdb.OrderedOutcome, "orderedRedeliver": rdb.OrderedRedeliver,
		"reserveOrder": rdb.ReserveOrder,
		"takeBoth":     rdb.TakeBoth,   // try now's limiters, the webhook's and its tenant's
		"delIfEqual":   rdb.DelIfEqual, // the OAuth2 token's lock, and a refused token
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	for name, script := range names {
		calls := rec.calls[script.Hash()]
		require.NotEmpty(t, calls, "script %s was exercised", name)
		for _, keys := range calls {
			require.NotEmpty(t, keys)
			slot := keySlot(keys[0])
			for _, k := range keys[1:] {
				require.Equal(t, slot, keySlot(k), "script %s: keys %q and %q are in different slots", name, keys[0], k)
			}
		}
	}
	assert.Len(t, rec.calls, len(names), "every script the library runs is checked here")
}
