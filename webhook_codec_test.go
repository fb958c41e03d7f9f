package webhooks

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smartdrop/webhooks/internal/api"
	"github.com/smartdrop/webhooks/internal/types"
)

// TestWebhookJSONIsTheCodec: a webhook created through the admin API with every field it may set comes
// back the same from the repository, from GET and from the registry's resolution (header values
// withheld from the API); every field of Webhook is in the API's answer.
func TestWebhookJSONIsTheCodec(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	d := newTestDispatcher(t, tr, Options{})
	srv := httptest.NewServer(d.Handler())
	t.Cleanup(srv.Close)
	in := Webhook{Tenant: "acme", URL: "https://example.com/hook", Description: "d", Events: []string{"a.*", "b"},
		Disabled: false, RateLimit: 7, MaxConcurrency: 2, Headers: map[string]string{"X-Team": "t"}, Filter: json.RawMessage(`{"type":"b"}`),
		Asymmetric: true, Auth: &EndpointAuth{Bearer: "tok-codec"}, Transform: `{"n": event.data}`}
	body, err := json.Marshal(in)
	require.NoError(t, err)
	status, answer := portalCall(t, srv, "", "POST", "/webhooks", string(body))
	require.Equal(t, http.StatusCreated, status, answer)
	var created Webhook
	decodeJSON(t, answer, &created)

	var keys map[string]json.RawMessage
	require.NoError(t, json.Unmarshal([]byte(answer), &keys))
	typ := reflect.TypeFor[Webhook]()
	for i := range typ.NumField() {
		name, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
		// asymmetric only asks Create for a kind of key; disabled_reason and disabled_at are there only while
		// the webhook is disabled (TestDisabledWebhookSaysWhy).
		if name != "asymmetric" && name != "disabled_reason" && name != "disabled_at" {
			assert.Contains(t, keys, name, "field %s is in the API's answer", typ.Field(i).Name)
		}
	}

	stored, err := d.Webhooks().Get(ctx, created.ID)
	require.NoError(t, err)
	subs, err := d.webhooks.subscribers(ctx, "acme", "b")
	require.NoError(t, err)
	require.Len(t, subs, 1)
	resolved := subs[0].Public()
	for name, got := range map[string]*Webhook{"stored": stored, "resolved": resolved} {
		want := in
		types.KeepFields(&want, stored)
		want.UpdatedAt = stored.UpdatedAt
		assert.Equal(t, want, *got, name)
	}
	assert.True(t, strings.HasPrefix(stored.Secret, "whsk_"), "asymmetric asked for an ed25519 key")
	withheld := *api.WebhookView(stored, true)
	assert.Equal(t, withheld, created, "the API's answer is the stored webhook, header values and auth withheld")
	assert.Equal(t, &EndpointAuth{Type: "bearer", Set: true}, created.Auth)
	assert.NotContains(t, answer, "tok-codec")
}

// TestLegacyStoredWebhooksAreRead: a webhook stored by a build before the one codec (short field names,
// its JSON in its subscription hashes) is read, listed and resolved, and written in the new form when
// next changed.
func TestLegacyStoredWebhooksAreRead(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	d := newTestDispatcher(t, tr, Options{})
	created := time.UnixMilli(1_700_000_000_123).UTC()
	legacy := `{"id":"wh_old","t":"acme","url":"https://example.com/old","secret":"whsec_` +
		`ePGEblhfgpWCEqlwhMWgCkqSMgAAnEI2WZ292YlBXc4=","desc":"old one","events":["a.*"],"off":false,"rl":3,` +
		`"h":{"X-Team":"t"},"f":{"type":"a.b"},"c":1700000000123,"u":1700000000456}`
	require.NoError(t, tr.rdb.HSet(ctx, d.keys.Webhooks(), "wh_old", legacy).Err())
	require.NoError(t, tr.rdb.HSet(ctx, d.keys.Tenant("acme"), "wh_old", legacy).Err())
	require.NoError(t, tr.rdb.HSet(ctx, d.keys.TenantSubscribers("acme", "a.*"), "wh_old", legacy).Err())

	want := Webhook{ID: "wh_old", Tenant: "acme", URL: "https://example.com/old",
		Secret: "whsec_ePGEblhfgpWCEqlwhMWgCkqSMgAAnEI2WZ292YlBXc4=", Description: "old one", Events: []string{"a.*"},
		RateLimit: 3, Headers: map[string]string{"X-Team": "t"}, Filter: json.RawMessage(`{"type":"a.b"}`),
		CreatedAt: created, UpdatedAt: time.UnixMilli(1_700_000_000_456).UTC()}
	got, err := d.Webhooks().Get(ctx, "wh_old")
	require.NoError(t, err)
	assert.Equal(t, want, *got)
	list, err := d.Webhooks().ListTenant(ctx, "acme")
	require.NoError(t, err)
	require.Len(t, list, 1)
	assert.Equal(t, want, *list[0])
	subs, err := d.webhooks.subscribers(ctx, "acme", "a.b")
	require.NoError(t, err)
	require.Len(t, subs, 1)
	assert.Equal(t, want, *subs[0].Public())

	got.Description = "new"
	_, err = d.Webhooks().Update(ctx, *got)
	require.NoError(t, err)
	raw, err := tr.rdb.HGet(ctx, d.keys.Webhooks(), "wh_old").Result()
	require.NoError(t, err)
	assert.Contains(t, raw, `"description":"new"`)
	assert.Contains(t, raw, `"tenant":"acme"`)
	assert.NotContains(t, raw, `"desc"`)
	v, err := tr.rdb.HGet(ctx, d.keys.TenantSubscribers("acme", "a.*"), "wh_old").Result()
	require.NoError(t, err)
	assert.Empty(t, v, "the subscription hash holds the id only")
}
