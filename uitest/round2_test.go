package uitest

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/smartdrop/webhooks"
)

// TestUIRoundTwo: the render race (a late list never overwrites a newer route; a link to the route on
// screen resets it), the circuit and times in words with their zone, µs durations, success as counts,
// a form error beside its field, the deliveries search across endpoints, the delivery's endpoint URL,
// the backlog (operator only), and the portal's search reaching only its tenant.
func TestUIRoundTwo(t *testing.T) {
	e := newEnvWith(t, func(o *webhooks.Options) { o.BreakAfter = 2 })
	// No worker: its retry of inv_0 (due 50 ms after the first failure) would be a third failed attempt
	// whenever inv_1's Dispatch came later than that (a loaded machine). The Dispatches attempt inline.
	e.stopWorker()
	ctx := context.Background()
	d, rc := e.d, e.rc
	rc.failing.Store(true)
	flaky, err := d.Webhooks().Create(ctx, webhooks.Webhook{URL: e.rcURL + "/flaky", Events: []string{"invoice.*"}, Tenant: "acme"})
	if err != nil {
		t.Fatal(err)
	}
	okHook, err := d.Webhooks().Create(ctx, webhooks.Webhook{URL: e.rcURL + "/ok?acme", Events: []string{"invoice.*"}, Tenant: "acme"})
	if err != nil {
		t.Fatal(err)
	}
	globex, err := d.Webhooks().Create(ctx, webhooks.Webhook{URL: e.rcURL + "/ok?globex", Events: []string{"*"}, Tenant: "globex"})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if _, err := d.Dispatch(ctx, webhooks.Event{Tenant: "acme", Type: "invoice.paid", ID: fmt.Sprintf("inv_%d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := d.Dispatch(ctx, webhooks.Event{Tenant: "globex", Type: "order.created", ID: "ord_1"}); err != nil {
		t.Fatal(err)
	}
	globexDl, err := d.Deliveries().Find(ctx, globex.ID, "ord_1")
	if err != nil {
		t.Fatal(err)
	}
	okDl, err := d.Deliveries().Find(ctx, okHook.ID, "inv_0")
	if err != nil {
		t.Fatal(err)
	}
	base := e.srv.URL + "/ui/"

	// Words: the formatting the pages use, on known values.
	e.do("open the operator UI", chromedp.Navigate(base))
	e.page("endpoints")
	for expr, want := range map[string]string{
		`webhooksFormat.duration(47000)`:                                                     "47 µs",
		`webhooksFormat.duration(3.2e6)`:                                                     "3.2 ms",
		`webhooksFormat.success([{success: 0, failed: 7}])`:                                  "0 of 7 attempts succeeded",
		`webhooksFormat.success([{success: 5, failed: 2}])`:                                  "5 of 7 attempts succeeded (71 %)",
		`webhooksFormat.success([{success: 1, failed: 0, skipped: 3}])`:                      "1 of 1 attempt succeeded; 3 skipped by the transformation",
		`webhooksFormat.success([{success: 0, failed: 0, skipped: 2}])`:                      "no attempts; 2 skipped by the transformation",
		`webhooksFormat.time('2026-12-03T12:40:05Z')`:                                        "2026-12-03 12:40:05 UTC",
		`webhooksFormat.circuit({state: 'closed', consecutive_failures: 0}).text`:            "delivering",
		`webhooksFormat.counts({pending: 1, parked: 0, waiting: 3, failed: 0, examined: 4})`: "1 pending · 3 of the latest 4 queued behind their order key · none of the latest 4 deliveries failed for good",
	} {
		if got := e.eval(expr); got != want {
			t.Errorf("%s = %q, want %q", expr, got, want)
		}
	}

	// The list: the open circuit in a customer's words, why it opened, and the next try's time and zone.
	e.waitFor("circuit and success rate loaded", `!document.querySelector('#endpoints').innerText.includes('…')`)
	row := e.text(`#endpoints tr[data-id="` + flaky.ID + `"]`)
	if !regexp.MustCompile(`paused after 2 failures \(the endpoint answered 500 Internal Server Error\), (next try (\d{4}-\d\d-\d\d )?\d\d:\d\d:\d\d UTC|next try any moment|trying again now)`).MatchString(row) {
		t.Errorf("the paused endpoint's row: %q", row)
	}
	if !strings.Contains(row, "0 of 2 attempts succeeded") {
		t.Errorf("the paused endpoint's success: %q", row)
	}
	if !strings.Contains(row, "3 waiting for the next try · none of the latest 3 deliveries failed for good") {
		t.Errorf("the paused endpoint's counts: %q", row)
	}
	if r := e.text(`#endpoints tr[data-id="` + okHook.ID + `"]`); !strings.Contains(r, "delivering") || !strings.Contains(r, "3 of 3 attempts succeeded") {
		t.Errorf("the healthy endpoint's row: %q", r)
	}
	e.shot("20-endpoints-paused")

	// The render race: a slow list must not overwrite the form the user went to meanwhile.
	e.slowList.Store(true)
	e.do("go to the list, then at once to the form", chromedp.Evaluate[chromedp.Void](
		`location.hash = '#/deliveries'; setTimeout(() => { location.hash = '#/'; setTimeout(() => { location.hash = '#/new'; }, 50); }, 50)`))
	e.do("let the slow list answer", chromedp.Sleep(900*time.Millisecond))
	e.page("new")
	if got := e.eval(`String(!!document.querySelector('#endpoint-form')) + ',' + String(!!document.querySelector('#endpoints'))`); got != "true,false" {
		t.Errorf("after #/ then #/new quickly: form, list on screen = %s", got)
	}
	e.do("click through the routes quickly", chromedp.Evaluate[chromedp.Void](
		`for (const h of ['#/', '#/deliveries', '#/', '#/backlog', '#/', '#/new']) document.querySelector('header a[href="' + h + '"]').click()`))
	e.do("let every answer arrive", chromedp.Sleep(1500*time.Millisecond))
	e.page("new")
	if got := e.eval(`String(!!document.querySelector('#endpoint-form')) + ',' + String(!!document.querySelector('#endpoints'))`); got != "true,false" {
		t.Errorf("after clicking through: form, list on screen = %s", got)
	}
	e.slowList.Store(false)

	// #/new twice resets the form; a refused URL is explained beside the field.
	e.do("type a URL", chromedp.SendKeys(chromedp.CSS("#f-url"), "https://example.com/typed"))
	e.do("New endpoint again", chromedp.Click(chromedp.CSS(`header a[href="#/new"]`)))
	e.waitFor("a fresh form", `document.querySelector('#f-url').value === ''`)
	e.do("an invalid URL", chromedp.SendKeys(chromedp.CSS("#f-url"), "ftp://example.com/x"), chromedp.Click(chromedp.CSS("#save")))
	e.waitFor("the error beside the URL", `!!document.querySelector('#f-url').closest('.field').querySelector('.field-error')`)
	if msg := e.text("#err-f-url"); msg == "" || strings.Contains(msg, "webhooks:") || strings.Contains(msg, "(invalid_request)") {
		t.Errorf("the URL's error: %q", msg)
	}
	if inv := e.eval(`document.querySelector('#f-url').getAttribute('aria-invalid') || ''`); inv != "true" {
		t.Errorf("the URL is not marked invalid: %q", inv)
	}
	e.shot("21-form-field-error")

	// The deliveries search, across endpoints: an event id finds its delivery to each endpoint.
	e.do("open the deliveries", chromedp.Navigate(base+"#/deliveries"))
	e.page("search")
	e.do("search an event id", chromedp.SendKeys(chromedp.CSS("#search-id"), "inv_0"), chromedp.Click(chromedp.CSS("#search")))
	// The list rendered before the search stays on screen until the search's answer is rendered.
	e.waitFor("the search's answer", `location.hash.includes('id=inv_0') && document.querySelector('main').dataset.page === 'search' &&
		document.querySelectorAll('#all-deliveries tbody tr').length === 2`)
	found := e.text("#all-deliveries tbody")
	if n := e.eval(`String(document.querySelectorAll('#all-deliveries tbody tr').length)`); n != "2" ||
		!strings.Contains(found, flaky.URL) || !strings.Contains(found, okHook.URL) || !strings.Contains(found, "UTC") {
		t.Errorf("search inv_0: %s rows: %q", n, found)
	}
	e.shot("22-deliveries-search")
	e.do("filter by status", chromedp.Navigate(base+"#/deliveries?status=success&event_type=order.created"))
	e.page("search")
	if ids := e.eval(`[...document.querySelectorAll('#all-deliveries tbody tr')].map((r) => r.dataset.id).join(',')`); ids != globexDl.ID {
		t.Errorf("success order.created deliveries: %q, want %s", ids, globexDl.ID)
	}

	// The delivery: its endpoint's URL, times with their zone, durations not "0.0 ms".
	e.do("open a delivery", chromedp.Navigate(base+"#/deliveries/"+okDl.ID))
	e.page("delivery")
	if u := e.text("#delivery-endpoint"); u != okHook.URL {
		t.Errorf("the delivery's endpoint: %q", u)
	}
	att := e.eval(`[...document.querySelectorAll('#attempts tbody td[data-label="Duration"]')].map((c) => c.textContent).join(',')`)
	if !regexp.MustCompile(`^\d+ (ns|µs)$|^\d+(\.\d)? ms$|^\d+\.\d\d s$`).MatchString(att) || att == "0.0 ms" {
		t.Errorf("the attempt's duration: %q", att)
	}
	if at := e.text(`#attempts tbody td[data-label="At"]`); !strings.HasSuffix(at, " UTC") {
		t.Errorf("the attempt's time: %q", at)
	}
	if p := e.text("#payload"); !strings.Contains(p, `"inv_0"`) || !strings.Contains(p, `"invoice.paid"`) {
		t.Errorf("the delivery's payload: %q", p)
	}
	if dis := e.eval(`String(document.querySelector('#redeliver').disabled)`); dis != "false" {
		t.Errorf("Send again is not offered on a delivery that succeeded (a receiver that lost it asks for it)")
	}
	if l := e.text("#redeliver"); l != "Send again" {
		t.Errorf("the button on a delivery that succeeded: %q", l)
	}
	e.shot("23-delivery-endpoint")

	// Retry now on a delivery of the paused endpoint cannot work (the API refuses it): not offered,
	// and the button says why.
	parked, err := d.Deliveries().Find(ctx, flaky.ID, "inv_2")
	if err != nil {
		t.Fatal(err)
	}
	e.do("open the parked delivery", chromedp.Navigate(base+"#/deliveries/"+parked.ID))
	e.page("delivery")
	if got := e.eval(`String(document.querySelector('#retry-now').disabled) + ' ' + document.querySelector('#retry-now').title`); got != "true The endpoint is paused: its deliveries wait for its next try" {
		t.Errorf("Retry now on a delivery of the paused endpoint: %q", got)
	}
	e.shot("26-retry-now-paused")

	// The backlog, from Stats: the paused endpoint's deliveries wait, its circuit is open.
	e.do("open the backlog", chromedp.Navigate(base+"#/backlog"))
	e.page("backlog")
	if open := e.text("#backlog-open"); open != "1" {
		t.Errorf("open circuits: %q", open)
	}
	if b := e.text("#backlog"); !strings.Contains(b, "Due now") || !strings.Contains(b, "UTC") {
		t.Errorf("the backlog: %q", b)
	}
	e.shot("24-backlog")

	// The portal: no backlog, and the search reaches only the token's tenant.
	token, err := d.PortalToken("acme", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	e.do("open the portal's search", chromedp.Navigate(e.srv.URL+"/portal/ui/#token="+token), chromedp.Navigate(e.srv.URL+"/portal/ui/#/deliveries?id="+globexDl.ID))
	e.page("search")
	if e.eval(`String(!!document.querySelector('#no-deliveries'))`) != "true" || strings.Contains(e.text("main"), globex.URL) {
		t.Errorf("the portal finds another tenant's delivery: %q", e.text("main"))
	}
	if e.eval(`String(!!document.querySelector('#nav-backlog'))`) != "false" {
		t.Error("the portal links to the backlog")
	}
	e.do("the portal's deliveries", chromedp.Navigate(e.srv.URL+"/portal/ui/#/deliveries"))
	e.page("search")
	if list := e.text("main"); strings.Contains(list, globex.URL) || !strings.Contains(list, flaky.URL) {
		t.Errorf("the portal's deliveries: %q", list)
	}
	e.shot("25-portal-deliveries")
	e.do("the portal's backlog", chromedp.Navigate(e.srv.URL+"/portal/ui/#/backlog"))
	e.waitFor("not found", `document.querySelector('h1').textContent === 'Not found'`)
	e.shot("27-portal-route-not-found")
	e.noIssues()
}
