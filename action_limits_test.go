package webhooks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// actionsBurst is how many resends (retries, tries now) a webhook's idle limiter grants at once.
var actionsBurst = int(ActionsBurst/time.Second)*ActionsPerWebhook + 1 // 11

// holdRedisClock holds miniredis's clock still, so that no limiter's slot refills while a slow machine
// runs a test's calls (on a real Redis they take far less than a refill; the bounds allow for it).
func holdRedisClock(tr *testRedis) time.Time {
	start := time.Now()
	if tr.mini != nil {
		tr.mini.SetTime(start)
	}
	return start
}

// refilled is how many slots a limiter of perSecond refills between start and now on the test's
// Redis (none on miniredis, whose clock the test holds).
func refilled(tr *testRedis, start time.Time, perSecond int) int {
	if tr.mini != nil {
		return 0
	}
	return int(time.Since(start).Seconds()*float64(perSecond)) + 1
}

// portalPost POSTs path through d's portal with a token of tenant.
func portalPost(t *testing.T, d *Dispatcher, tenant, path string) (int, http.Header, string) {
	t.Helper()
	token, err := d.PortalToken(tenant, time.Hour)
	require.NoError(t, err)
	rec, ok := rawPortalRequest(d.Portal(), http.MethodPost, path, token)
	require.True(t, ok)
	return rec.Code, rec.Header(), rec.Body.String()
}

// requireTooMany checks a portal refusal: 429, Retry-After in whole seconds, and words saying when
// to try again.
func requireTooMany(t *testing.T, code int, h http.Header, body, what string) {
	t.Helper()
	require.Equal(t, http.StatusTooManyRequests, code, body)
	secs, err := strconv.Atoi(h.Get("Retry-After"))
	require.NoError(t, err, "Retry-After: %q", h.Get("Retry-After"))
	assert.GreaterOrEqual(t, secs, 1)
	assert.LessOrEqual(t, secs, 2, "the next slot is a second off at most")
	var e struct {
		Error struct{ Code, Message string }
	}
	require.NoError(t, json.Unmarshal([]byte(body), &e), body)
	assert.Equal(t, "too_many_requests", e.Error.Code)
	assert.Contains(t, e.Error.Message, what)
	assert.Contains(t, e.Error.Message, "try again in ")
}

// TestResendsAreBounded is the loop (issue 43): a tenant's 201 successful deliveries, each
// redelivered twice through the portal, reached the endpoint 402 more times. Now a webhook's burst of
// resends reaches it, then 1 a second; the others answer 429 with Retry-After and words, and send
// nothing, nor add to the delivery's index.
func TestResendsAreBounded(t *testing.T) {
	t.Parallel()
	tr := newTestRedis(t)
	start := holdRedisClock(tr)
	d, clock := newClockedDispatcher(t, tr, Options{PortalKey: []byte(strings.Repeat("k", 32))})
	rc := newReceiver(t)
	ctx := context.Background()
	wh, err := d.Webhooks().Create(ctx, Webhook{URL: rc.srv.URL, Events: []string{"*"}, Tenant: "acme"})
	require.NoError(t, err)
	deliveries := sized(41, 201) // the finding's 201 in the long size; past the burst (11) in both
	ids := make([]string, deliveries)
	for i := range ids {
		res, err := d.Dispatch(ctx, Event{Type: "order.created", ID: fmt.Sprintf("e%d", i), Tenant: "acme"})
		require.NoError(t, err)
		require.Equal(t, StatusSuccess, res[0].Delivery.Status)
		ids[i] = res[0].Delivery.ID
	}
	clock.Advance(time.Minute) // past ResendQuiet: each may be sent again
	start = holdRedisClock(tr)

	granted, refused := 0, 0
	for round := range 2 {
		for _, id := range ids {
			code, h, body := portalPost(t, d, "acme", "/deliveries/"+id+"/redeliver")
			switch code {
			case http.StatusOK:
				granted++
			default:
				requireTooMany(t, code, h, body, "resends: webhook "+wh.ID+" takes 1 per second")
				refused++
			}
		}
		clock.Advance(time.Minute) // the first round's resends past ResendQuiet too
		_ = round
	}
	assert.GreaterOrEqual(t, granted, actionsBurst, "a webhook's burst of resends goes out")
	assert.LessOrEqual(t, granted, actionsBurst+refilled(tr, start, ActionsPerWebhook), "then 1 a second")
	assert.Equal(t, 2*deliveries, granted+refused)
	assert.Equal(t, deliveries+granted, rc.count(), "a refused resend sends nothing")

	// In Go: the same limiter, the same words, ErrActionsLimited. On a real Redis a slot may have
	// refilled since the loop's last refusal (a CI run's cluster phase took 31 s over the loop): each
	// slot refilled since then is one resend granted before the refusal.
	spent := time.Now()
	for i := 0; ; i++ {
		_, err = d.Redeliver(ctx, ids[i])
		if err != nil || i >= min(refilled(tr, spent, ActionsPerWebhook), len(ids)-1) {
			break
		}
	}
	require.ErrorIs(t, err, ErrActionsLimited)
	assert.Contains(t, err.Error(), "resends: webhook "+wh.ID+" takes 1 per second; try again in ")
	var limited interface{ RetryAfter() time.Duration }
	require.True(t, errors.As(err, &limited), "%v", err)
	assert.Positive(t, limited.RetryAfter())
}

// TestResentTestSendKeepsItsRetention: a test send resent is kept TestSendRetention from the resend,
// not Options.Retention (issue 43: it moved from 1 h to 168 h).
func TestResentTestSendKeepsItsRetention(t *testing.T) {
	t.Parallel()
	tr := newTestRedis(t)
	holdRedisClock(tr)
	d, clock := newClockedDispatcher(t, tr, Options{})
	rc := newReceiver(t)
	ctx := context.Background()
	wh, err := d.Webhooks().Create(ctx, Webhook{URL: rc.srv.URL, Events: []string{"*"}})
	require.NoError(t, err)
	sent, err := d.SendTest(ctx, wh.ID)
	require.NoError(t, err)
	clock.Advance(time.Minute)
	dl, err := d.Redeliver(ctx, sent.ID)
	require.NoError(t, err)
	require.Equal(t, 2, rc.count(), "resent")
	assert.Equal(t, clock.Now().Add(TestSendRetention).UnixMilli(), dl.ExpiresAt.UnixMilli(), "kept TestSendRetention from the resend")
	shard, err := d.keys.DeliveryShard(sent.ID)
	require.NoError(t, err)
	ttl, err := tr.rdb.PTTL(ctx, d.keys.Delivery(shard, sent.ID)).Result()
	require.NoError(t, err)
	assert.Positive(t, ttl)
	assert.LessOrEqual(t, ttl, TestSendRetention, "its record's key expires with it")
}

// TestRetriesAndTriesNowAreBounded: retry now of pending deliveries, and try now of a webhook, each
// take a webhook's burst, then answer 429 with Retry-After (the API) or ErrActionsLimited (Go), and
// change nothing; a tenant's webhooks together are bounded too.
func TestRetriesAndTriesNowAreBounded(t *testing.T) {
	t.Parallel()
	tr := newTestRedis(t)
	firstStart := holdRedisClock(tr)
	start := firstStart
	d := newTestDispatcher(t, tr, Options{PortalKey: []byte(strings.Repeat("k", 32)), RetrySchedule: []time.Duration{time.Hour}})
	rc := newReceiver(t)
	rc.status.Store(http.StatusBadRequest)
	ctx := context.Background()
	wh, err := d.Webhooks().Create(ctx, Webhook{URL: rc.srv.URL, Events: []string{"*"}, Tenant: "acme"})
	require.NoError(t, err)
	const deliveries = 20
	ids := make([]string, deliveries)
	for i := range ids {
		res, err := d.Dispatch(ctx, Event{Type: "order.created", ID: fmt.Sprintf("e%d", i), Tenant: "acme"})
		require.NoError(t, err)
		require.Equal(t, StatusPending, res[0].Delivery.Status, "its retry an hour off")
		ids[i] = res[0].Delivery.ID
	}

	granted := 0
	for _, id := range ids {
		code, h, body := portalPost(t, d, "acme", "/deliveries/"+id+"/retry")
		if code == http.StatusOK {
			granted++
			continue
		}
		requireTooMany(t, code, h, body, "retries: webhook "+wh.ID+" takes 1 per second")
	}
	assert.GreaterOrEqual(t, granted, actionsBurst)
	assert.LessOrEqual(t, granted, actionsBurst+refilled(tr, start, ActionsPerWebhook))
	n, err := d.ProcessDue(ctx)
	require.NoError(t, err)
	assert.Equal(t, granted, n, "only the retries granted are due now")

	// Try now (the operator's route; in Go for a tenant's webhook): a closed circuit refuses the probe,
	// after the call took its slot, so a loop of them is bounded as well.
	start = time.Now() // miniredis's clock stays where it is held
	probes, limited := 0, 0
	for range actionsBurst + 5 {
		_, err := d.ProbeNow(ctx, wh.ID)
		switch {
		case errors.Is(err, ErrActionsLimited):
			limited++
			assert.Contains(t, err.Error(), "tries now: webhook "+wh.ID+" takes 1 per second; try again in ")
		default:
			require.ErrorIs(t, err, ErrProbeRefused)
			probes++
		}
	}
	assert.GreaterOrEqual(t, probes, actionsBurst)
	assert.LessOrEqual(t, probes, actionsBurst+refilled(tr, start, ActionsPerWebhook))
	assert.Positive(t, limited)

	// A tenant's webhooks together: 40 more webhooks, a delivery each, each retried twice by 16
	// goroutines at once (at once: a loop as slow as a loaded machine makes it would be refilled as
	// it goes), more than the tenant's burst allows. Every retry granted so far, refused for its
	// delivery's state or not, spent a slot of the tenant's.
	const more = 40
	var retried []string
	for i := range more {
		tw, err := d.Webhooks().Create(ctx, Webhook{URL: rc.srv.URL, Events: []string{fmt.Sprintf("t.x%d", i)}, Tenant: "acme"})
		require.NoError(t, err)
		res, err := d.Dispatch(ctx, Event{Type: fmt.Sprintf("t.x%d", i), ID: fmt.Sprintf("t%d", i), Tenant: "acme"})
		require.NoError(t, err)
		for _, r := range res { // and to wh, whose events are "*"
			if r.WebhookID == tw.ID {
				retried = append(retried, r.Delivery.ID, r.Delivery.ID)
			}
		}
	}
	require.Len(t, retried, 2*more)
	var tenantGrantedN, tenantRefusedN atomic.Int32
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Go(func() {
			for i := g; i < len(retried); i += 16 {
				_, err := d.RetryNow(ctx, retried[i])
				switch {
				case errors.Is(err, ErrActionsLimited) && strings.Contains(err.Error(), "its tenant takes 5 per second"):
					tenantRefusedN.Add(1)
				case err == nil || errors.Is(err, ErrNotRetryable): // the second retry of one just made due
					tenantGrantedN.Add(1)
				default:
					assert.NoError(t, err)
				}
			}
		})
	}
	wg.Wait()
	tenantGranted, tenantRefused := int(tenantGrantedN.Load()), int(tenantRefusedN.Load())
	assert.Positive(t, tenantRefused, "the tenant's bound refuses some")
	tenantBurst := int(ActionsBurst/time.Second)*ActionsPerTenant + 1 // 51
	assert.GreaterOrEqual(t, granted+tenantGranted, tenantBurst, "not before the tenant's burst is spent")
	assert.LessOrEqual(t, granted+tenantGranted, tenantBurst+refilled(tr, firstStart, ActionsPerTenant))
}

// TestResendLimitSharedByDispatchers: resends from 16 goroutines through 3 Dispatchers at once take
// one webhook's limit together: its burst and the refill, however the calls interleave across
// processes; each refused one sends nothing.
func TestResendLimitSharedByDispatchers(t *testing.T) {
	t.Parallel()
	const dispatchers, goroutines, deliveries = 3, 16, 60
	tr := newTestRedis(t)
	holdRedisClock(tr)
	ctx := context.Background()
	var ds []*Dispatcher
	var clocks []*testClock
	for range dispatchers {
		d, clock := newClockedDispatcher(t, tr, Options{})
		ds, clocks = append(ds, d), append(clocks, clock)
	}
	rc := newReceiver(t)
	mustCreate(t, ds[0], rc, "*")
	ids := make([]string, deliveries)
	for i := range ids {
		res, err := ds[i%dispatchers].Dispatch(ctx, Event{Type: "order.created", ID: fmt.Sprintf("e%d", i)})
		require.NoError(t, err)
		require.Equal(t, StatusSuccess, res[0].Delivery.Status)
		ids[i] = res[0].Delivery.ID
	}
	for _, c := range clocks {
		c.Advance(time.Minute) // past ResendQuiet
	}
	start := holdRedisClock(tr)
	var granted, refused atomic.Int32
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := g; i < deliveries; i += goroutines {
				_, err := ds[(g+i)%dispatchers].Redeliver(ctx, ids[i])
				switch {
				case err == nil:
					granted.Add(1)
				case errors.Is(err, ErrActionsLimited):
					refused.Add(1)
				default:
					assert.NoError(t, err)
				}
			}
		})
	}
	wg.Wait()
	assert.GreaterOrEqual(t, int(granted.Load()), actionsBurst, "a webhook's burst of resends goes out")
	assert.LessOrEqual(t, int(granted.Load()), actionsBurst+refilled(tr, start, ActionsPerWebhook), "then 1 a second, across Dispatchers")
	assert.Equal(t, int32(deliveries), granted.Load()+refused.Load())
	assert.Equal(t, deliveries+int(granted.Load()), rc.count(), "a refused resend sends nothing")
}
