package main

import (
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// backlogEmpty reports whether the server holds no delivery due, scheduled or leased (nothing more
// will be sent), with the backlog's total as progress.
func backlogEmpty(a *api) (bool, int64) {
	status, body, _, err := a.do("GET", "/backlog", nil)
	if err != nil || status != 200 {
		return false, -1
	}
	var b struct{ Due, Scheduled, Leased int64 }
	if json.Unmarshal(body, &b) != nil {
		return false, -1
	}
	return b.Due+b.Scheduled+b.Leased == 0, b.Due + b.Scheduled + b.Leased
}

// TestEachEventOnce: 2,000 events from 8 concurrent HTTP clients, each event sent twice (by two
// different clients, half of them in batches of 10) → each (webhook, event) pair received once, its
// signature valid; of each event's two answers one is fresh and one a duplicate with the same
// deliveries, and every 202 names each subscribed webhook. An event sent without a key, or with a
// wrong one, is answered 401 and never recorded. On the tests' own Redis and in miniredis mode.
func TestEachEventOnce(t *testing.T) {
	for _, mode := range []string{"redis", "miniredis"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			addr := ""
			if mode == "redis" {
				addr = realRedis(t)
			}
			srv := startServer(t, serverArgs(addr, "dedup-"+randomHex(4), "-timeout", "5s"))
			a := newAPI(t, func() string { return "http://" + srv.addr }, testKey)
			rc := newReceiver(t)
			allID, allSecret := a.createWebhook(rc.url("all"), []string{"*"}, "")
			ordersID, ordersSecret := a.createWebhook(rc.url("orders"), []string{"order.*"}, "")
			rc.setSecret("all", allSecret)
			rc.setSecret("orders", ordersSecret)

			const events, clients = 2000, 8
			type sent struct {
				fresh, dup int
				deliveries map[string]string // webhook id -> delivery id
			}
			var mu sync.Mutex
			byEvent := map[string]*sent{}
			var want []string // the pairs the receiver must get
			typeOf := func(i int) string {
				if i%2 == 0 {
					return "order.created"
				}
				return "invoice.paid"
			}
			for i := range events {
				want = append(want, fmt.Sprintf("all/evt-%d", i))
				if i%2 == 0 {
					want = append(want, fmt.Sprintf("orders/evt-%d", i))
				}
			}
			// Client c sends events c, c+8, … and then, again, those of client c-1: every event goes
			// twice, from two clients, at about the same time as other events.
			var wg sync.WaitGroup
			for c := range clients {
				wg.Go(func() {
					var mine []int
					for _, owner := range []int{c, (c + clients - 1) % clients} {
						for i := owner; i < events; i += clients {
							mine = append(mine, i)
						}
					}
					batch := 1
					if c%2 == 1 {
						batch = 10
					}
					for start := 0; start < len(mine); start += batch {
						chunk := mine[start:min(start+batch, len(mine))]
						var evts []map[string]any
						for _, i := range chunk {
							evts = append(evts, map[string]any{"id": fmt.Sprintf("evt-%d", i), "type": typeOf(i),
								"data": map[string]any{"n": i}})
						}
						var body any = evts[0]
						if batch > 1 {
							body = map[string]any{"events": evts}
						}
						status, out, _, err := a.do("POST", "/v1/events", body)
						if !assert.NoError(t, err) || !assert.Equal(t, 202, status, "%s", out) {
							return
						}
						var ans ingestAnswer
						require.NoError(t, json.Unmarshal(out, &ans))
						require.Len(t, ans.Events, len(chunk))
						mu.Lock()
						for k, e := range ans.Events {
							i := chunk[k]
							assert.Equal(t, fmt.Sprintf("evt-%d", i), e.ID)
							var got []string
							deliveries := map[string]string{}
							for _, w := range e.Webhooks {
								got = append(got, w.WebhookID)
								deliveries[w.WebhookID] = w.DeliveryID
								assert.True(t, w.Accepted)
								assert.Equal(t, e.Duplicate, w.Duplicate)
							}
							wantHooks := []string{allID}
							if i%2 == 0 {
								wantHooks = append(wantHooks, ordersID)
							}
							slices.Sort(got)
							slices.Sort(wantHooks)
							assert.Equal(t, wantHooks, got, "event %d's answer names each subscribed webhook", i)
							s := byEvent[e.ID]
							if s == nil {
								s = &sent{deliveries: deliveries}
								byEvent[e.ID] = s
							} else {
								assert.Equal(t, s.deliveries, deliveries, "event %d: both answers name the same deliveries", i)
							}
							if e.Duplicate {
								s.dup++
							} else {
								s.fresh++
							}
						}
						mu.Unlock()
					}
				})
			}
			// Without a key, or with a wrong one: 401, and nothing recorded.
			for _, key := range []string{"", "not-the-key-0123456789"} {
				anon := newAPI(t, a.base, key)
				status, out, hdr, err := anon.do("POST", "/v1/events", map[string]any{"id": "unauth-1", "type": "order.created"})
				require.NoError(t, err)
				assert.Equal(t, 401, status, "%s", out)
				assert.Contains(t, hdr.Get("WWW-Authenticate"), "Bearer")
			}
			wg.Wait()
			require.False(t, t.Failed())
			require.Len(t, byEvent, events)
			for id, s := range byEvent {
				assert.Equal(t, 1, s.fresh, "%s: one fresh answer", id)
				assert.Equal(t, 1, s.dup, "%s: one duplicate answer", id)
			}

			waitFor(t, "every pair received", func() (bool, int64) {
				n := rc.received(want)
				return n == len(want), int64(n)
			})
			waitFor(t, "nothing left to send", func() (bool, int64) { return backlogEmpty(a) })
			got := rc.snapshot()
			assert.Len(t, got, len(want), "only the subscribed pairs were received")
			for _, p := range want {
				assert.Len(t, got[p], 1, "%s received once", p)
			}
			assert.Empty(t, rc.badSignatures())
			assert.Empty(t, got["all/unauth-1"], "the unauthenticated event was never sent")
			var found struct{ Deliveries []any }
			require.NoError(t, json.Unmarshal(a.must(200, "GET", "/deliveries?id="+url.QueryEscape("unauth-1"), nil), &found))
			assert.Empty(t, found.Deliveries, "the unauthenticated event was never recorded")
		})
	}
}
