package openapitest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smartdrop/webhooks"
)

// exercise calls every operation of the document c checks, with answers of success and of error.
func exercise(t *testing.T, c *checker, d *webhooks.Dispatcher, rcURL string, operator bool) {
	ctx := context.Background()
	tenant := ""
	if operator {
		tenant = `,"tenant":"acme"`
	}
	code, wh := c.call("POST", "/webhooks", "/webhooks", fmt.Sprintf(`{"url":%q,"events":["order.*"],"headers":{"X-Key":"v"},"filter":{"data.n":{"$gte":1}}%s}`, rcURL+"/ok", tenant))
	require.Equal(t, 201, code)
	id := wh["id"].(string)
	code, bad := c.call("POST", "/webhooks", "/webhooks", fmt.Sprintf(`{"url":%q,"events":["order.*"]%s}`, rcURL+"/fail", tenant))
	require.Equal(t, 201, code)
	badID := bad["id"].(string)
	c.call("POST", "/webhooks", "/webhooks", `{"url":"not a url"}`)
	c.call("POST", "/webhooks", "/webhooks", `{`)
	c.call("GET", "/webhooks", "/webhooks", "")
	c.call("GET", "/webhooks", "/webhooks?tenant=acme", "")
	W := "/webhooks/{id}"
	c.call("GET", W, "/webhooks/"+id, "")
	c.call("GET", W, "/webhooks/nope", "")
	c.call("PATCH", W, "/webhooks/"+id, `{"description":"orders","rate_limit":10}`)
	c.call("PATCH", W, "/webhooks/"+id, `{"events":"x"}`)
	code, _ = c.call("POST", W+"/test", "/webhooks/"+id+"/test", "")
	assert.Contains(t, []int{201, 202}, code)
	c.call("POST", W+"/rotate-secret", "/webhooks/"+id+"/rotate-secret", `{"grace_seconds":60}`)
	c.call("POST", W+"/rotate-secret", "/webhooks/"+id+"/rotate-secret", `{"grace_seconds":-1}`)
	c.call("GET", W+"/secret", "/webhooks/"+id+"/secret", "")

	// the catalog of event types: the operator changes it, the portal reads it; order.created's schema
	// is enforced on the deliveries below
	ET := "/event-types/{name}"
	orderCreated := `{"name":"order.created","description":"An order was placed.","schema":{"type":"object","properties":{"n":{"type":"integer"}}},"examples":[{"n":2}]}`
	if operator {
		code, _ = c.call("POST", "/event-types", "/event-types", orderCreated)
		require.Equal(t, 201, code)
		c.call("POST", "/event-types", "/event-types", `{"name":"order.created"}`)
		c.call("POST", "/event-types", "/event-types", `{"name":"x.y","schema":{"type":"object","required":["a"]},"examples":[{}]}`)
		c.call("POST", "/event-types", "/event-types", `{"name":"tmp.type"}`)
		code, _ = c.call("PATCH", ET, "/event-types/tmp.type", `{"deprecated":true,"description":"going away"}`)
		require.Equal(t, 200, code)
		c.call("PATCH", ET, "/event-types/tmp.type", `{"schema":{"type":12}}`)
		c.call("PATCH", ET, "/event-types/nope", `{}`)
		code, _ = c.call("DELETE", ET, "/event-types/tmp.type", "")
		require.Equal(t, 204, code)
		c.call("DELETE", ET, "/event-types/tmp.type", "")
	} else {
		var et webhooks.EventType
		require.NoError(t, json.Unmarshal([]byte(orderCreated), &et))
		_, err := d.EventTypes().Create(ctx, et)
		require.NoError(t, err)
	}
	_, types := c.call("GET", "/event-types", "/event-types", "")
	assert.Len(t, types["event_types"], 1)
	c.call("GET", ET, "/event-types/order.created", "")
	c.call("GET", ET, "/event-types/nope", "")
	_, doc := c.call("GET", "/event-types/openapi.json", "/event-types/openapi.json", "")
	assert.Contains(t, doc["webhooks"], "order.created")

	// deliveries: one success, one that fails for good (retries exhausted)
	_, err := d.Dispatch(ctx, webhooks.Event{ID: "ev-ok", Type: "order.created", Tenant: "acme", Data: json.RawMessage(`{"n":2}`)})
	require.NoError(t, err)
	_, err = d.Dispatch(ctx, webhooks.Event{ID: "ev-bad", Type: "order.created", Tenant: "acme", Data: json.RawMessage(`{"n":2}`)})
	require.NoError(t, err)
	_, err = d.Dispatch(ctx, webhooks.Event{ID: "ev-bad2", Type: "order.created", Tenant: "acme", Data: json.RawMessage(`{"n":2}`)})
	require.NoError(t, err)
	_, pageBody := c.call("GET", W+"/deliveries", "/webhooks/"+id+"/deliveries?limit=1", "")
	c.call("GET", W+"/deliveries", "/webhooks/"+badID+"/deliveries?status=failed", "")
	_, badPage := c.call("GET", W+"/deliveries", "/webhooks/"+badID+"/deliveries", "")
	badList := badPage["deliveries"].([]any)
	require.NotEmpty(t, badList)
	c.call("GET", "/deliveries/{id}", "/deliveries/"+badList[0].(map[string]any)["id"].(string), "")
	c.call("GET", W+"/deliveries", "/webhooks/"+id+"/deliveries?status=nope", "")
	list := pageBody["deliveries"].([]any)
	require.NotEmpty(t, list)
	dlID := list[0].(map[string]any)["id"].(string)
	c.call("GET", "/deliveries/{id}", "/deliveries/"+dlID, "")
	c.call("GET", "/deliveries/{id}", "/deliveries/nope", "")
	_, found := c.call("GET", "/deliveries", "/deliveries?id="+dlID, "")
	assert.Len(t, found["deliveries"], 1, "a search by delivery id")
	_, found = c.call("GET", "/deliveries", "/deliveries?id=ev-bad", "")
	assert.Len(t, found["deliveries"], 2, "a search by event id: its delivery to each webhook")
	_, found = c.call("GET", "/deliveries", "/deliveries?status=pending&event_type=order.created&limit=10", "")
	assert.NotEmpty(t, found["deliveries"])
	c.call("GET", "/deliveries", "/deliveries?status=nope", "")
	_, found = c.call("GET", "/deliveries", "/deliveries?limit=1", "")
	require.Equal(t, "limit", found["stopped"], "a search of one delivery among several")
	next, _ := found["next_cursor"].(string)
	require.NotEmpty(t, next)
	_, found = c.call("GET", "/deliveries", "/deliveries?limit=1&cursor="+next, "")
	assert.Len(t, found["deliveries"], 1, "the search continued by its cursor")
	c.call("GET", "/deliveries", "/deliveries?cursor=nope", "")
	if operator {
		c.call("GET", "/backlog", "/backlog", "")
	}
	c.call("GET", "/deliveries/{id}/payload", "/deliveries/"+dlID+"/payload", "")
	// transformations: a preview on a catalog example, on an event, a skip, and refusals
	code, _ = c.call("POST", "/transform/preview", "/transform/preview", `{"transform":"{\"m\": event.data.n * 2}","event_type":"order.created"}`)
	assert.Equal(t, 200, code)
	c.call("POST", "/transform/preview", "/transform/preview", `{"transform":"null","event":{"type":"order.created","data":{"n":1}}}`)
	c.call("POST", "/transform/preview", "/transform/preview", `{"transform":"{\"m\": 1 + \"a\"}","event_type":"order.created"}`)
	c.call("POST", "/transform/preview", "/transform/preview", `{"transform":"null","event_type":"nope"}`)
	_, req := c.call("GET", "/deliveries/{id}/request", "/deliveries/"+dlID+"/request", "")
	custom := 0
	for _, h := range req["headers"].([]any) {
		if h := h.(map[string]any); h["name"] == "X-Key" {
			custom++
			assert.NotContains(t, h, "value", "a custom header's value is never sent")
		}
	}
	assert.Equal(t, 1, custom, "the custom header is listed")
	c.call("GET", "/deliveries/{id}/request", "/deliveries/nope/request", "")
	// a delivery that failed once, to a webhook whose circuit is closed, waits for its retry: retry it now
	code, once := c.call("POST", "/webhooks", "/webhooks", fmt.Sprintf(`{"url":%q,"events":["retry.*"]%s}`, rcURL+"/fail", tenant))
	require.Equal(t, 201, code)
	_, err = d.Dispatch(ctx, webhooks.Event{ID: "ev-retry", Type: "retry.me", Tenant: "acme"})
	require.NoError(t, err)
	_, found = c.call("GET", "/deliveries", "/deliveries?id=ev-retry", "")
	require.Len(t, found["deliveries"], 1)
	retryID := found["deliveries"].([]any)[0].(map[string]any)["id"].(string)
	code, _ = c.call("POST", "/deliveries/{id}/retry", "/deliveries/"+retryID+"/retry", "")
	assert.Equal(t, 200, code, "webhook %v", once["id"])
	c.call("POST", "/deliveries/{id}/retry", "/deliveries/"+badList[1].(map[string]any)["id"].(string)+"/retry", "") // paused: 409
	// Probe now: the paused webhook's wait ends; the healthy one's circuit is closed (409).
	if operator {
		code, _ = c.call("POST", W+"/probe", "/webhooks/"+badID+"/probe", "")
		assert.Equal(t, 200, code)
		c.call("POST", W+"/probe", "/webhooks/"+id+"/probe", "")
		c.call("POST", W+"/probe", "/webhooks/nope/probe", "")
	}
	c.call("POST", "/deliveries/{id}/redeliver", "/deliveries/"+dlID+"/redeliver", "")
	since := url.QueryEscape(time.Now().Add(-time.Hour).UTC().Format(time.RFC3339))
	c.call("POST", W+"/recover", "/webhooks/"+badID+"/recover?since="+since, "")
	c.call("POST", W+"/recover", "/webhooks/"+badID+"/recover", "")
	c.call("GET", "/deliveries/{id}", "/deliveries/"+badList[0].(map[string]any)["id"].(string), "") // with redelivered_at
	replaySince := time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)
	c.call("POST", W+"/replay", "/webhooks/"+id+"/replay", `{"since":"`+replaySince+`"}`)
	c.call("POST", W+"/replay", "/webhooks/"+id+"/replay", `{"since":"yesterday"}`)
	c.call("POST", W+"/replay", "/webhooks/nope/replay", `{"since":"`+replaySince+`"}`)
	c.call("GET", W+"/health", "/webhooks/"+badID+"/health", "")
	c.call("GET", W+"/health", "/webhooks/"+id+"/health", "")
	c.call("GET", W+"/stats", "/webhooks/"+id+"/stats", "")
	_, counts := c.call("GET", W+"/counts", "/webhooks/"+badID+"/counts", "")
	assert.Positive(t, counts["examined"], "the failing webhook's deliveries are counted")
	c.call("GET", W+"/counts", "/webhooks/nope/counts", "")
	// An ordered key's queue: two events of one key behind the paused webhook's head.
	for _, ev := range []string{"ev-o1", "ev-o2"} {
		_, err = d.Dispatch(ctx, webhooks.Event{ID: ev, Type: "order.created", Tenant: "acme", OrderKey: "cust-1", Data: json.RawMessage(`{"n":2}`)})
		require.NoError(t, err)
	}
	_, found = c.call("GET", "/deliveries", "/deliveries?id=ev-o2", "")
	for _, f := range found["deliveries"].([]any) {
		if f := f.(map[string]any); f["webhook_id"] == badID {
			_, q := c.call("GET", "/deliveries/{id}/queue", "/deliveries/"+f["id"].(string)+"/queue", "")
			assert.Equal(t, 2.0, q["length"], "the paused webhook's key holds both")
		}
	}
	c.call("GET", "/deliveries/{id}/queue", "/deliveries/"+dlID+"/queue", "") // no order key: 400
	c.call("GET", "/openapi.json", "/openapi.json", "")
	c.call("DELETE", W, "/webhooks/"+badID, "")
	c.call("DELETE", W, "/webhooks/"+badID, "")
	if operator { // a tenant's erasure, one step: another tenant than the one above, and a bad name
		c.call("DELETE", "/tenants/{tenant}", "/tenants/globex", "")
		c.call("DELETE", "/tenants/{tenant}", "/tenants/a%20b", "")
	}
}

// TestAnswersMatchTheDocument: every answer of every operation, on Handler and Portal, is documented
// (its status) and valid against the document's schema; every operation answered with success once.
func TestAnswersMatchTheDocument(t *testing.T) {
	t.Parallel()
	rc := receiver(t)
	for _, portal := range []bool{false, true} {
		t.Run(fmt.Sprintf("portal=%t", portal), func(t *testing.T) {
			t.Parallel()
			d := newDispatcher(t)
			var c *checker
			if portal {
				token, err := d.PortalToken("acme", time.Hour)
				require.NoError(t, err)
				c = newChecker(t, d.Portal(), token)
			} else {
				c = newChecker(t, d.Handler(), "")
			}
			exercise(t, c, d, rc.URL, !portal)
			for _, op := range c.operations() {
				assert.True(t, c.seen[op], "%s was not answered with success", op)
			}
		})
	}
}
