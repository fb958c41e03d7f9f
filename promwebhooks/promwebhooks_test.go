package promwebhooks_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/redis/go-redis/v9"
	"github.com/smartdrop/webhooks"
	"github.com/smartdrop/webhooks/promwebhooks"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func setup(t *testing.T) (*webhooks.Dispatcher, *promwebhooks.Collector) {
	m := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	c := promwebhooks.New(promwebhooks.Options{})
	d, err := webhooks.New(rdb, c.Instrument(webhooks.Options{KeyPrefix: "promt", AllowPrivateNetworks: true,
		Timeout: 2 * time.Second, RetrySchedule: []time.Duration{20 * time.Millisecond}}))
	require.NoError(t, err)
	c.Observe(d)
	return d, c
}

func endpoint(t *testing.T, status int) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(status) }))
	t.Cleanup(srv.Close)
	return srv.URL
}

// settle runs worker passes until n deliveries have been settled.
func settle(t *testing.T, d *webhooks.Dispatcher, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for got := 0; got < n; time.Sleep(10 * time.Millisecond) {
		k, err := d.ProcessDue(context.Background())
		require.NoError(t, err)
		got += k
		require.False(t, time.Now().After(deadline), "settled %d of %d", got, n)
	}
}

// TestCollectorFollowsAKnownSequence: two failed attempts of a delivery that then fails for good, one
// success, one attempt with no response, and three deliveries waiting: the collected values match.
func TestCollectorFollowsAKnownSequence(t *testing.T) {
	ctx := context.Background()
	d, c := setup(t)
	for ev, url := range map[string]string{"a.fail": endpoint(t, 500), "a.ok": endpoint(t, 200)} {
		_, err := d.Webhooks().Create(ctx, webhooks.Webhook{URL: url, Events: []string{ev}})
		require.NoError(t, err)
	}
	closed := httptest.NewServer(http.NotFoundHandler())
	dead := closed.URL
	closed.Close() // nothing listens there: no response
	_, err := d.Webhooks().Create(ctx, webhooks.Webhook{URL: dead, Events: []string{"a.dead"}})
	require.NoError(t, err)

	_, err = d.Dispatch(ctx, webhooks.Event{ID: "evt_f", Type: "a.fail"}) // 500, then 500 again: failed
	require.NoError(t, err)
	settle(t, d, 1)
	_, err = d.Dispatch(ctx, webhooks.Event{ID: "evt_o", Type: "a.ok"}) // 200
	require.NoError(t, err)
	_, err = d.Dispatch(ctx, webhooks.Event{ID: "evt_d", Type: "a.dead"}) // no response: a retry in 20ms
	require.NoError(t, err)
	for i := range 3 {
		_, err = d.Enqueue(ctx, webhooks.Event{ID: fmt.Sprint("evt_q", i), Type: "a.ok"})
		require.NoError(t, err)
	}

	require.NoError(t, testutil.CollectAndCompare(c, strings.NewReader(`
# HELP webhooks_attempts_total HTTP attempts recorded, by outcome: success (2xx), http_error (another status), error (no response).
# TYPE webhooks_attempts_total counter
webhooks_attempts_total{outcome="error"} 1
webhooks_attempts_total{outcome="http_error"} 2
webhooks_attempts_total{outcome="success"} 1
# HELP webhooks_deliveries_failed_total Deliveries failed for good: retries ran out, 410 Gone, webhook deleted or disabled.
# TYPE webhooks_deliveries_failed_total counter
webhooks_deliveries_failed_total 1
# HELP webhooks_leased_deliveries Deliveries leased: attempts in flight.
# TYPE webhooks_leased_deliveries gauge
webhooks_leased_deliveries 0
# HELP webhooks_open_circuits Webhooks whose circuit is open.
# TYPE webhooks_open_circuits gauge
webhooks_open_circuits 0
# HELP webhooks_stats_errors_total Collections whose Dispatcher.Stats call failed (the backlog gauges were left out).
# TYPE webhooks_stats_errors_total counter
webhooks_stats_errors_total 0
`), "webhooks_attempts_total", "webhooks_deliveries_failed_total", "webhooks_leased_deliveries",
		"webhooks_open_circuits", "webhooks_stats_errors_total"))

	// The due and scheduled figures move with the clock (the dead endpoint's retry falls due in
	// 20ms): read them from one scrape.
	g := gauges(t, c) // one scrape
	due, scheduled := g["webhooks_due_deliveries"], g["webhooks_scheduled_deliveries"]
	assert.Equal(t, 4.0, due+scheduled, "three enqueued and one retry waiting")
	assert.GreaterOrEqual(t, due, 3.0)
	assert.Equal(t, 0.0, g["webhooks_stats_truncated"])
	age := g["webhooks_oldest_due_age_seconds"]
	assert.GreaterOrEqual(t, age, 0.0)
	assert.Less(t, age, 5.0)
	assert.Equal(t, map[string]uint64{"error": 1, "http_error": 2, "success": 1}, histogramCounts(t, c))
}

// histogramCounts reads the attempt duration histogram's sample count per outcome.
func histogramCounts(t *testing.T, c prometheus.Collector) map[string]uint64 {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(c))
	mfs, err := reg.Gather()
	require.NoError(t, err)
	out := map[string]uint64{}
	for _, mf := range mfs {
		if mf.GetName() == "webhooks_attempt_duration_seconds" {
			for _, m := range mf.GetMetric() {
				out[m.GetLabel()[0].GetValue()] = m.GetHistogram().GetSampleCount()
			}
		}
	}
	return out
}

// gauges reads the unlabelled gauges of one scrape.
func gauges(t *testing.T, c prometheus.Collector) map[string]float64 {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(c))
	mfs, err := reg.Gather()
	require.NoError(t, err)
	out := map[string]float64{}
	for _, mf := range mfs {
		if g := mf.GetMetric()[0].GetGauge(); g != nil {
			out[mf.GetName()] = g.GetValue()
		}
	}
	return out
}

// TestMetricNamesLint: testutil's linter finds nothing wrong with the metrics, and the pedantic
// registry accepts the collector.
func TestMetricNamesLint(t *testing.T) {
	ctx := context.Background()
	d, c := setup(t)
	_, err := d.Webhooks().Create(ctx, webhooks.Webhook{URL: endpoint(t, 200), Events: []string{"a.ok"}})
	require.NoError(t, err)
	_, err = d.Dispatch(ctx, webhooks.Event{ID: "evt_o", Type: "a.ok"})
	require.NoError(t, err)
	problems, err := testutil.CollectAndLint(c)
	require.NoError(t, err)
	assert.Empty(t, problems)
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(c))
	_, err = reg.Gather()
	require.NoError(t, err)
}
