package webhooks

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// allocatedBy returns the bytes f allocated, the least of three runs (runtime.MemStats is
// process-wide: the tests using it do not run in parallel).
func allocatedBy(f func()) uint64 {
	least := ^uint64(0)
	for range 3 {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		f()
		runtime.ReadMemStats(&after)
		least = min(least, after.TotalAlloc-before.TotalAlloc)
	}
	return least
}

// numberList is n numbers, i+frac for i from base, comma separated.
func numberList(n, base int, frac string) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%d%s", base+i, frac)
	}
	return b.String()
}

// TestFilterInFloatsBounded (issue 21): a 250-value $in of floats against an event holding 4,000
// floats costs one Enqueue at most 20 MB of allocation (it cost 1,021 MB when each comparison parsed
// both numbers as 1024-bit floats).
func TestFilterInFloatsBounded(t *testing.T) {
	tr := newTestRedis(t)
	d := newTestDispatcher(t, tr, Options{})
	ctx := context.Background()
	rc := newReceiver(t)
	_, err := d.Webhooks().Create(ctx, Webhook{URL: rc.srv.URL, Events: []string{"*"},
		Filter: json.RawMessage(`{"data.xs": {"$in": [` + numberList(250, 100000, ".5") + `]}}`)})
	require.NoError(t, err)
	data := json.RawMessage(`{"xs": [` + numberList(4000, 0, ".25") + `]}`)
	var rs []Result
	n := 0
	bytes := allocatedBy(func() {
		n++
		rs, err = d.Enqueue(ctx, Event{Type: "a.b", ID: fmt.Sprintf("evt_%d", n), Data: data})
	})
	require.NoError(t, err)
	assert.Empty(t, rs, "no element of the event is listed: the webhook is filtered out")
	assert.LessOrEqual(t, bytes, uint64(20<<20), "bytes allocated by one Enqueue")
	t.Logf("one Enqueue allocated %d bytes", bytes)
}

// TestFilterDataDecodedOnce (issue 21): the event's data is decoded once per event whatever the
// number of filtered webhooks: on a 200 KB event, 100 webhooks with a trivial filter that reads the
// data cost no more than one such webhook's decode on top of 100 unfiltered webhooks.
func TestFilterDataDecodedOnce(t *testing.T) {
	tr := newTestRedis(t)
	d := newTestDispatcher(t, tr, Options{})
	ctx := context.Background()
	rc := newReceiver(t)
	// Four tenants: 100 or 1 webhooks, with or without the filter.
	setups := []struct {
		tenant string
		n      int
		filter string
	}{{"f100", 100, `{"data.k": {"$exist": true}}`}, {"u100", 100, ""}, {"f1", 1, `{"data.k": {"$exist": true}}`}, {"u1", 1, ""}}
	for _, s := range setups {
		for range s.n {
			_, err := d.Webhooks().Create(ctx, Webhook{URL: rc.srv.URL, Events: []string{"*"}, Tenant: s.tenant,
				Filter: json.RawMessage(s.filter)})
			require.NoError(t, err)
		}
	}
	data := json.RawMessage(`{"k": 1, "xs": [` + numberList(30000, 100000, "") + `]}`)
	require.Greater(t, len(data), 200<<10)
	cost := map[string]uint64{}
	for _, s := range setups {
		// The same id every time: after the first, a duplicate, which resolves its targets all the same.
		cost[s.tenant] = allocatedBy(func() {
			rs, err := d.Enqueue(ctx, Event{Type: "a.b", ID: "evt_1", Tenant: s.tenant, Data: data})
			require.NoError(t, err)
			require.Len(t, rs, s.n)
		})
	}
	oneDecode := int64(cost["f1"]) - int64(cost["u1"])
	hundred := int64(cost["f100"]) - int64(cost["u100"])
	t.Logf("bytes per Enqueue: %v; one webhook's filter %d, a hundred webhooks' filters %d", cost, oneDecode, hundred)
	require.Greater(t, oneDecode, int64(1<<20), "decoding 200 KB of data allocates megabytes")
	assert.Less(t, hundred, 2*oneDecode, "100 filtered webhooks cost more than two decodes of the data")
}
