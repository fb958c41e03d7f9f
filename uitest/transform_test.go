package uitest

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smartdrop/webhooks"
)

// setField sets a form field's value as typing would, firing its input and change events.
func setField(sel, value string) chromedp.Action[chromedp.Void] {
	return chromedp.Evaluate[chromedp.Void](`(() => { const i = document.querySelector(` + jsString(sel) + `); i.value = ` + jsString(value) +
		`; i.dispatchEvent(new Event('input')); i.dispatchEvent(new Event('change')); })()`)
}

// preview runs the form's Preview of expr on the sample shown and returns what it says.
func (e *env) preview(expr string) string {
	e.t.Helper()
	e.do("preview "+expr, setField("#f-transform", expr),
		chromedp.Evaluate[chromedp.Void](`document.querySelector('#preview-result').replaceChildren()`),
		chromedp.Click(chromedp.CSS("#preview")))
	e.waitFor("the preview of "+expr, `document.querySelector('#preview-result').textContent !== ''`)
	return e.text("#preview-result")
}

// jsonOf is the JSON the element matching sel shows, decoded ("" when it holds none).
func (e *env) jsonOf(sel string) any {
	e.t.Helper()
	var v any
	if err := json.Unmarshal([]byte(e.text(sel)), &v); err != nil {
		e.t.Errorf("%s does not show JSON: %q", sel, e.text(sel))
	}
	return v
}

func decode(t *testing.T, s string) any {
	t.Helper()
	var v any
	require.NoError(t, json.Unmarshal([]byte(s), &v), s)
	return v
}

// TestUITransformPreview: the endpoint form's Transformation field previews an expression on the
// catalog's example of a type, or on a sample the user edits: the result as JSON, a skip, or the error
// in words with its line and column (marked under the expression). Saving an expression the API
// refuses says why beside the field and creates nothing; a saved one is on the endpoint's page, is in
// the edit form, and removing it there sends events as they are again.
func TestUITransformPreview(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	_, err := e.d.EventTypes().Create(ctx, webhooks.EventType{Name: "invoice.paid",
		Examples: []json.RawMessage{[]byte(`{"id":"in_1042","amount":4205,"currency":"EUR"}`)}})
	require.NoError(t, err)
	e.open("#/new", "new")
	e.waitFor("the catalog's example as the sample", `document.querySelector('#f-sample-type').value === 'invoice.paid'`)
	assert.Equal(t, "The catalog's example of invoice.paid; edit it to try another event.", e.text("#sample-source"))

	e.preview(`{"invoice": event.data.id, "cents": event.data.amount}`)
	assert.Equal(t, decode(t, `{"invoice":"in_1042","cents":4205}`), e.jsonOf("#preview-json"), "the preview on the catalog's example")
	e.shot("80-transform-preview")
	e.do("Enter in the sample's type", chromedp.Evaluate[chromedp.Void](`document.querySelector('#preview-result').replaceChildren()`),
		chromedp.SendKeys(chromedp.CSS("#f-sample-type"), kb.Enter))
	e.waitFor("the preview after Enter", `document.querySelector('#preview-result').textContent !== ''`)
	assert.Equal(t, "new", e.eval(`document.querySelector('main').dataset.page`), "Enter in the sample's type left the form")
	assert.Equal(t, decode(t, `{"invoice":"in_1042","cents":4205}`), e.jsonOf("#preview-json"), "Enter in the sample's type previews")

	e.do("edit the sample", setField("#f-sample-data", `{"id": "in_9", "amount": 1}`))
	assert.Equal(t, "Your own sample, edited from the catalog's example of invoice.paid.", e.text("#sample-source"))
	e.preview(`{"invoice": event.data.id, "cents": event.data.amount}`)
	assert.Equal(t, decode(t, `{"invoice":"in_9","cents":1}`), e.jsonOf("#preview-json"), "the preview on the edited sample")

	got := e.preview(`event.data.amount >= 100 ? event.data : null`)
	assert.True(t, strings.HasPrefix(got, "Skipped: the expression gives null for this event"), "a skip: %q", got)

	e.preview(`{"n": 1 + "a"}`)
	assert.Equal(t, "Line 1, column 9: found no matching overload for '_+_' applied to '(int, string)'.", e.text("#preview-error"))
	assert.Equal(t, `{"n": 1 + "a"}`+"\n        ^", e.text("#preview-result .transform-marker"), "the column marked")
	e.shot("81-transform-preview-error")

	e.preview(`{"x": event.data.nope}`)
	assert.Equal(t, "The transformation failed on this event: no such key: nope.", e.text("#preview-error"))

	e.do("fill the form with a bad expression", setField("#f-url", e.rcURL+"/ok"), setField("#f-events", "invoice.paid"),
		setField("#f-transform", `{"n": 1 + "a"}`), chromedp.Click(chromedp.CSS("#save")))
	e.waitFor("the refusal beside the field", `!!document.querySelector('#err-f-transform')`)
	assert.Equal(t, "Line 1, column 9: found no matching overload for '_+_' applied to '(int, string)'.", e.text("#err-f-transform"))
	assert.Equal(t, "true", e.eval(`String(document.querySelector('#err-f-transform').closest('.field').contains(document.querySelector('#f-transform')))`),
		"the error is beside the Transformation field")
	assert.Equal(t, "new", e.eval(`document.querySelector('main').dataset.page`))
	list, err := e.d.Webhooks().List(ctx)
	require.NoError(t, err)
	assert.Empty(t, list, "a refused expression created an endpoint")
	e.shot("82-transform-save-refused")

	const expr = `{"invoice": event.data.id}`
	e.do("save a good one", setField("#f-transform", expr), chromedp.Click(chromedp.CSS("#save")))
	e.page("endpoint")
	assert.Equal(t, expr, e.text("#endpoint-transform"))
	e.shot("83-endpoint-transform")
	w := waitWebhook(t, e.d, e.rcURL+"/ok")
	assert.Equal(t, expr, w.Transform)

	e.do("edit it", chromedp.Click(chromedp.CSS("#edit")))
	e.page("edit")
	assert.Equal(t, expr, e.eval(`document.querySelector('#f-transform').value`))
	e.do("remove it", setField("#f-transform", ""), chromedp.Click(chromedp.CSS("#save")))
	e.page("endpoint")
	assert.Equal(t, "none: each event is sent as it is", e.text("#endpoint-transform"))
	w, err = e.d.Webhooks().Get(ctx, w.ID)
	require.NoError(t, err)
	assert.Empty(t, w.Transform)
	e.noIssues()
}

// TestUIDeliveryShowsTheBodySent: a delivery's page shows the body its endpoint's transformation
// sent, the body the receiver got; once the endpoint changes after the attempt the page says the body
// is rebuilt with the transformation as it is now; a delivery its transformation failed on shows the
// event, not as a body sent.
func TestUIDeliveryShowsTheBodySent(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	w, dl := e.deliverOne(webhooks.Webhook{URL: e.rcURL + "/ok", Events: []string{"invoice.*"},
		Transform: `body({"text": "Invoice " + event.data.id + " paid"})`},
		webhooks.Event{Type: "invoice.paid", ID: "inv_7", Data: map[string]string{"id": "in_7"}}, webhooks.StatusSuccess)
	bodies := e.rc.received()
	require.Len(t, bodies, 1)
	assert.Equal(t, decode(t, `{"text":"Invoice in_7 paid"}`), decode(t, bodies[0]), "the receiver's body")

	e.open("#/deliveries/"+dl.ID, "delivery")
	assert.Equal(t, decode(t, bodies[0]), e.jsonOf("#payload"), "the page's body is the one the receiver got")
	assert.Equal(t, "Body sent", e.eval(`document.querySelector('#payload').closest('section').querySelector('h2').textContent`))
	assert.Contains(t, e.text("#payload-note"), "unchanged since the delivery's last attempt")
	e.shot("84-delivery-body-sent")

	w.Transform = `body({"text": "changed"})`
	_, err := e.d.Webhooks().Update(ctx, *w)
	require.NoError(t, err)
	e.open("#/", "endpoints") // then the delivery's page afresh
	e.open("#/deliveries/"+dl.ID, "delivery")
	assert.Contains(t, e.text("#payload-note"), "after this delivery's last attempt: this body is rebuilt with its transformation as it is now")

	_, failed := e.deliverOne(webhooks.Webhook{URL: e.rcURL + "/ok", Events: []string{"order.*"}, Transform: `{"x": event.data.nope}`},
		webhooks.Event{Type: "order.placed", ID: "ord_1", Data: map[string]string{"id": "o_1"}}, webhooks.StatusFailed)
	e.open("#/deliveries/"+failed.ID, "delivery")
	assert.Equal(t, "Event", e.eval(`document.querySelector('#payload').closest('section').querySelector('h2').textContent`))
	assert.Contains(t, e.text("#payload-note"), "fails on it now")
	assert.Equal(t, "o_1", e.eval(`JSON.parse(document.querySelector('#payload').textContent).data.id`))
	assert.Len(t, e.rc.received(), 1, "the failed transformation sent something")
	e.shot("85-delivery-transform-failed")
	e.noIssues()
}

// TestUIPortalTransformsItsOwn: in the portal a tenant sets and previews its own endpoint's
// transformation (the preview's event is the tenant's), and another tenant's endpoint, transformation
// and all, is neither listed nor opened.
func TestUIPortalTransformsItsOwn(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	own, err := e.d.Webhooks().Create(ctx, webhooks.Webhook{URL: e.rcURL + "/ok", Events: []string{"invoice.*"}, Tenant: "acme"})
	require.NoError(t, err)
	other, err := e.d.Webhooks().Create(ctx, webhooks.Webhook{URL: e.rcURL + "/ok?globex", Events: []string{"invoice.*"}, Tenant: "globex",
		Transform: `{"globex": true}`})
	require.NoError(t, err)

	e.openPortal("acme", "#/webhooks/"+own.ID+"/edit", "edit")
	e.do("a sample", setField("#f-sample-type", "invoice.paid"), setField("#f-sample-data", `{"id": "in_1"}`))
	const expr = `{"tenant": event.tenant, "invoice": event.data.id}`
	e.preview(expr)
	assert.Equal(t, decode(t, `{"tenant":"acme","invoice":"in_1"}`), e.jsonOf("#preview-json"), "the portal previews the tenant's own event")
	e.shot("86-portal-transform-preview")
	e.do("save", chromedp.Click(chromedp.CSS("#save")))
	e.page("endpoint")
	assert.Equal(t, expr, e.text("#endpoint-transform"))
	got, err := e.d.Webhooks().Get(ctx, own.ID)
	require.NoError(t, err)
	assert.Equal(t, expr, got.Transform)

	e.openPortal("acme", "#/", "endpoints")
	assert.Equal(t, "1", e.eval(`String(document.querySelectorAll('#endpoints tbody tr').length)`), "the portal lists another tenant's endpoint")
	for _, route := range []string{"#/webhooks/" + other.ID, "#/webhooks/" + other.ID + "/edit"} {
		e.do("another tenant's "+route, chromedp.Navigate(e.srv.URL+"/portal/ui/"+route))
		e.page("error")
		assert.True(t, strings.HasPrefix(e.text("#error-words"), "There is no endpoint "+other.ID+" among yours"), "%s: %q", route, e.text("#error-words"))
		assert.NotContains(t, e.eval(`document.body.innerText`), "globex")
	}
	got, err = e.d.Webhooks().Get(ctx, other.ID)
	require.NoError(t, err)
	assert.Equal(t, `{"globex": true}`, got.Transform)
	e.noIssues()
}
