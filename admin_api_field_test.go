package webhooks

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smartdrop/webhooks/internal/api"
)

// TestHandlerErrorNamesTheField: an invalid webhook's 400 names the JSON field at fault, on create and
// on PATCH, so a form can show the error beside it; an error about no one field names none.
func TestHandlerErrorNamesTheField(t *testing.T) {
	t.Parallel()
	tr := newTestRedis(t)
	d, _ := newClockedDispatcher(t, tr, Options{})
	c := newAPI(t, d)
	rc := newReceiver(t)
	wh := mustCreate(t, d, rc, "*")
	u := rc.srv.URL
	for _, tc := range []struct {
		method, path, body, field string
	}{
		{"POST", "/webhooks", `{"url":"ftp://example.com/x","events":["*"]}`, "url"},
		{"POST", "/webhooks", fmt.Sprintf(`{"url":%q,"events":[]}`, u), "events"},
		{"POST", "/webhooks", fmt.Sprintf(`{"url":%q,"events":["*"],"rate_limit":-1}`, u), "rate_limit"},
		{"POST", "/webhooks", fmt.Sprintf(`{"url":%q,"events":["*"],"max_concurrency":-1}`, u), "max_concurrency"},
		{"PATCH", "/webhooks/" + wh.ID, `{"max_concurrency":10001}`, "max_concurrency"},
		{"POST", "/webhooks", fmt.Sprintf(`{"url":%q,"events":["*"],"description":"a\u0000b"}`, u), "description"},
		{"POST", "/webhooks", fmt.Sprintf(`{"url":%q,"events":["*"],"tenant":"a b"}`, u), "tenant"},
		{"POST", "/webhooks", fmt.Sprintf(`{"url":%q,"events":["*"],"headers":{"webhook-id":"x"}}`, u), "headers"},
		{"POST", "/webhooks", fmt.Sprintf(`{"url":%q,"events":["*"],"filter":{"$nope":1}}`, u), "filter"},
		{"PATCH", "/webhooks/" + wh.ID, `{"url":"not a url"}`, "url"},
		{"POST", "/webhooks", `{`, ""},
	} {
		r := c.do(tc.method, tc.path, tc.body)
		require.Equal(t, http.StatusBadRequest, r.status, "%s %s", tc.body, r.body)
		var e api.ErrorBody
		require.NoError(t, json.Unmarshal(r.body, &e))
		assert.Equal(t, tc.field, e.Error.Field, "%s: %s", tc.body, r.body)
	}
}

// TestBodyErrorsAreWords: a body with a field of the wrong type, an unknown field or broken JSON is
// answered in words for a person, naming the field, with no Go type or struct name.
func TestBodyErrorsAreWords(t *testing.T) {
	t.Parallel()
	tr := newTestRedis(t)
	d := newTestDispatcher(t, tr, Options{})
	srv := httptest.NewServer(d.Handler())
	t.Cleanup(srv.Close)
	for _, tc := range []struct{ body, field, words string }{
		{`{"url":"https://example.com/h","events":"order.*"}`, "events", "events must be an array of strings, not a JSON string"},
		{`{"url":"https://example.com/h","events":["*"],"rate_limit":"fast"}`, "rate_limit", "rate_limit must be a whole number"},
		{`{"url":"https://example.com/h","events":["*"],"disabled":"yes"}`, "disabled", "disabled must be true or false"},
		{`{"url":"https://example.com/h","events":["*"],"colour":"red"}`, "colour", "colour is not a field of a webhook"},
		{`{"url":`, "", "the body is not valid JSON"},
	} {
		status, body := portalCall(t, srv, "", "POST", "/webhooks", tc.body)
		assert.Equal(t, http.StatusBadRequest, status, tc.body)
		assert.Contains(t, body, tc.words, tc.body)
		if tc.field != "" {
			assert.Contains(t, body, `"field":"`+tc.field+`"`, tc.body)
		}
		for _, goWords := range []string{"Go struct", "json:", "[]string", "Webhook.", "unmarshal"} {
			assert.NotContains(t, body, goWords, tc.body)
		}
	}
}
