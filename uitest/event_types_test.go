package uitest

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/smartdrop/webhooks"
)

// TestUIEventTypePick: the endpoint form offers the catalog's event types (a deprecated one marked);
// picking one adds it to the Events field, which keeps its free patterns.
func TestUIEventTypePick(t *testing.T) {
	e := newEnv(t)
	for _, et := range []webhooks.EventType{{Name: "invoice.paid", Description: "An invoice was paid."}, {Name: "invoice.voided", Deprecated: true}} {
		if _, err := e.d.EventTypes().Create(context.Background(), et); err != nil {
			t.Fatal(err)
		}
	}
	e.do("the new endpoint form", chromedp.Navigate(e.srv.URL+"/ui/#/new"))
	e.page("new")
	e.waitFor("the catalog's pick", `!!document.querySelector('#f-event-type-pick')`)
	if got := e.eval(`[...document.querySelectorAll('#f-event-type-pick option')].map((o) => o.textContent).join('|')`); got !=
		"Add an event type from the catalog…|invoice.paid|invoice.voided (deprecated)" {
		t.Errorf("the pick's options: %q", got)
	}
	e.eval(`(() => { const s = document.querySelector('#f-event-type-pick'); s.value = 'invoice.paid'; s.dispatchEvent(new Event('change')); return ''; })()`)
	if got := e.eval(`document.querySelector('#f-events').value`); got != "*, invoice.paid" {
		t.Errorf("the Events field after the pick: %q", got)
	}
}

// TestUIEventTypeCatalog: the catalog of event types is browsable, in the operator's view and the
// portal: a page lists each type (a deprecated one marked) with its description; a type's page shows
// its description, the fields of its schema (type, required, description), the schema itself and its
// examples; an unknown type is said so in words.
func TestUIEventTypeCatalog(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	for _, et := range []webhooks.EventType{
		{Name: "invoice.paid", Description: "An invoice was paid in full.",
			Schema: []byte(`{"type":"object","required":["invoice_id","amount"],"properties":{` +
				`"invoice_id":{"type":"string","description":"The invoice's id."},` +
				`"amount":{"type":"integer","description":"In cents."},` +
				`"note":{"type":["string","null"]}}}`),
			Examples: []json.RawMessage{[]byte(`{"invoice_id":"inv_42","amount":1999}`), []byte(`{"invoice_id":"inv_43","amount":5,"note":"partial refund"}`)}},
		{Name: "invoice.voided", Deprecated: true},
	} {
		if _, err := e.d.EventTypes().Create(ctx, et); err != nil {
			t.Fatal(err)
		}
	}
	for _, view := range []string{"operator", "portal"} {
		if view == "operator" {
			e.open("#/", "endpoints")
		} else {
			e.openPortal("acme", "#/", "endpoints")
		}
		e.do("the catalog from the menu", chromedp.Click(chromedp.CSS(`header a[href="#/event-types"]`)))
		e.page("event-types")
		rows := e.eval(`[...document.querySelectorAll('#event-types tbody tr')].map((r) => r.innerText.replace(/\s+/g, ' ').trim()).join('|')`)
		if rows != "invoice.paid An invoice was paid in full.|invoice.voided deprecated —" {
			t.Errorf("%s: the catalog's list: %q", view, rows)
		}
		e.shot("77-event-types-" + view)
		e.do("open a type", chromedp.Click(chromedp.CSS(`#event-types tr[data-name="invoice.paid"] a`)))
		e.page("event-type")
		if s := e.text("h1") + " · " + e.text("#event-type-description"); s != "invoice.paid · An invoice was paid in full." {
			t.Errorf("%s: the type's page: %q", view, s)
		}
		fields := e.eval(`[...document.querySelectorAll('#schema-fields tbody tr')].map((r) => [...r.cells].map((c) => c.textContent).join(';')).join('|')`)
		if fields != "data.invoice_id;string;yes;The invoice's id.|data.amount;integer;yes;In cents.|data.note;string or null;no;—" {
			t.Errorf("%s: the schema's fields: %q", view, fields)
		}
		var schema map[string]any
		if err := json.Unmarshal([]byte(e.text("#schema")), &schema); err != nil || schema["type"] != "object" {
			t.Errorf("%s: the schema shown: %v, %v", view, schema, err)
		}
		examples := e.eval(`[...document.querySelectorAll('.example pre')].map((p) => JSON.stringify(JSON.parse(p.textContent))).join('|')`)
		if examples != `{"invoice_id":"inv_42","amount":1999}|{"invoice_id":"inv_43","amount":5,"note":"partial refund"}` {
			t.Errorf("%s: the examples: %q", view, examples)
		}
		e.shot("78-event-type-" + view)
		e.do("a deprecated type", chromedp.Navigate(e.eval(`location.href.replace(/#.*$/, '')`)+"#/event-types/invoice.voided"))
		e.page("event-type")
		if s := e.text("#event-type-deprecated"); !strings.HasPrefix(s, "Deprecated") {
			t.Errorf("%s: the deprecated type: %q", view, s)
		}
		if s := e.text("#schema") + " · " + e.text("#no-examples"); s != "None: its data may be any JSON value. · No example." {
			t.Errorf("%s: a type without schema or examples: %q", view, s)
		}
		e.do("an unknown type", chromedp.Navigate(e.eval(`location.href.replace(/#.*$/, '')`)+"#/event-types/invoice.nope"))
		e.page("error")
		if s := e.text("#error-words"); !strings.HasPrefix(s, "There is no event type invoice.nope") {
			t.Errorf("%s: an unknown type: %q", view, s)
		}
	}
	e.noIssues()
}
