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

// TestUIDeliveryDetail: a delivery's timeline shows its attempts and its redelivery in order; its
// request lists the headers sent with the values that were sent and withholds the endpoint's header
// value and credential; the deliveries search filters by creation time (in UTC, from the form); an
// ordered delivery links to its key's queue, which shows the key's deliveries in order and the first
// one's state in words.
func TestUIDeliveryDetail(t *testing.T) {
	e := newEnvWith(t, func(o *webhooks.Options) { o.BlockKeyOnFailure = true })
	ctx := context.Background()
	d, rc := e.d, e.rc
	rc.failing.Store(true)
	flaky, err := d.Webhooks().Create(ctx, webhooks.Webhook{URL: e.rcURL + "/flaky", Events: []string{"invoice.*", "order.*"}, Tenant: "acme",
		Headers: map[string]string{"X-Api-Key": "k-123-secret"}, Auth: &webhooks.EndpointAuth{Bearer: "tok-456-secret"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Dispatch(ctx, webhooks.Event{Tenant: "acme", Type: "invoice.paid", ID: "inv_0"}); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 3; i++ {
		if _, err := d.Dispatch(ctx, webhooks.Event{Tenant: "acme", Type: "order.updated", ID: fmt.Sprintf("ord_%d", i), OrderKey: "cust-42"}); err != nil {
			t.Fatal(err)
		}
	}
	waitStatus(t, d, flaky.ID, "inv_0", webhooks.StatusFailed)
	waitStatus(t, d, flaky.ID, "ord_1", webhooks.StatusFailed) // holds its key (BlockKeyOnFailure)
	rc.failing.Store(false)
	inv, err := d.Deliveries().Find(ctx, flaky.ID, "inv_0")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Redeliver(ctx, inv.ID); err != nil {
		t.Fatal(err)
	}
	base := e.srv.URL + "/ui/"

	// The timeline and the request.
	e.do("open the redelivered delivery", chromedp.Navigate(base+"#/deliveries/"+inv.ID))
	e.page("delivery")
	steps := e.eval(timelineSteps)
	want := `^Created\|Attempt 1: HTTP 500 in [^|]+\|Attempt 2: HTTP 500 in [^|]+\|Sent again \(redelivered\)\|Attempt 3: HTTP 200 in [^|]+$`
	if !regexp.MustCompile(want).MatchString(steps) {
		t.Errorf("the timeline: %q", steps)
	}
	header := func(name string) string {
		return e.eval(`(() => { const r = document.querySelector('#request-headers tr[data-name=` + jsString(name) + `]'); return r ? r.querySelector('td[data-label=Value]').textContent : 'missing'; })()`)
	}
	if v := header("webhook-id"); v != inv.ID {
		t.Errorf("webhook-id: %q, want %s", v, inv.ID)
	}
	if v := header("Content-Type"); v != "application/json" {
		t.Errorf("Content-Type: %q", v)
	}
	for _, name := range []string{"X-Api-Key", "Authorization", "webhook-signature"} {
		if v := header(name); v != "not shown" {
			t.Errorf("%s: %q, want it withheld", name, v)
		}
	}
	if page := e.eval(`document.documentElement.outerHTML`); strings.Contains(page, "k-123-secret") || strings.Contains(page, "tok-456-secret") {
		t.Error("a header value or credential is in the page")
	}
	if !strings.Contains(e.text("main"), "Rebuilt, not stored") {
		t.Error("the request does not say it is rebuilt")
	}
	e.shot("32-delivery-timeline-request")

	// The search by creation time, from the form (UTC).
	e.do("search from an hour ahead", chromedp.Navigate(base+"#/deliveries?from="+time.Now().Add(time.Hour).UTC().Format(time.RFC3339)))
	e.page("search")
	if e.eval(`String(!!document.querySelector('#no-deliveries'))`) != "true" {
		t.Errorf("deliveries created in the future: %q", e.text("main"))
	}
	fromT := time.Now().Add(-time.Hour).UTC()
	from := fromT.Format("2006-01-02 15:04") // UTC, as the page shows times
	e.do("fill the window", chromedp.Evaluate[chromedp.Void](`document.querySelector('#search-from').value = `+jsString(from)+`; document.querySelector('#search-to').value = ''`),
		chromedp.Click(chromedp.CSS("#search")))
	e.waitFor("the window's answer", `location.hash.includes('from=`+fromT.Format("2006-01-02T15")+`') && document.querySelector('main').dataset.page === 'search' && !!document.querySelector('#all-deliveries')`)
	if n := e.eval(`String(document.querySelectorAll('#all-deliveries tbody tr').length)`); n != "4" {
		t.Errorf("deliveries of the last hour: %s rows: %q", n, e.text("#all-deliveries"))
	}
	if v := e.eval(`document.querySelector('#search-from').value`); v != from {
		t.Errorf("the form keeps from: %q, want %q", v, from)
	}
	e.shot("33-deliveries-time-filter")

	// An ordered delivery's key, its queue.
	ord2, err := d.Deliveries().Find(ctx, flaky.ID, "ord_2")
	if err != nil {
		t.Fatal(err)
	}
	e.do("open an ordered delivery", chromedp.Navigate(base+"#/deliveries/"+ord2.ID))
	e.page("delivery")
	if p := e.text("#delivery-position"); p != "1 ahead of it" {
		t.Errorf("its position: %q", p)
	}
	e.do("see its queue", chromedp.Click(chromedp.CSS("#show-queue")))
	e.page("queue")
	rows := e.eval(`[...document.querySelectorAll('#queue tbody tr')].map((r) => r.querySelector('td[data-label=Event] .muted').textContent + ':' + r.querySelector('td[data-label=State]').textContent).join('|')`)
	if rows != "ord_1:failed, and holds the deliveries behind it until it is redelivered|ord_2:waits for the one before it|ord_3:waits for the one before it" {
		t.Errorf("the queue: %q", rows)
	}
	if cur := e.eval(`document.querySelector('#queue tr.current').dataset.id`); cur != ord2.ID {
		t.Errorf("the delivery opened is not marked: %q", cur)
	}
	if s := e.text("#queue-summary"); !strings.Contains(s, "3 deliveries of this order key") {
		t.Errorf("the queue's summary: %q", s)
	}
	e.shot("34-order-key-queue")
	e.noIssues()
}
