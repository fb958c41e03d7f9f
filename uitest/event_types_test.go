package uitest

import (
	"context"
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
