package uitest

import (
	"context"
	"fmt"
	"net"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/smartdrop/webhooks"
)

// waitAttempts waits until a webhook's delivery of an event has n attempts and is pending.
func waitAttempts(t *testing.T, d *webhooks.Dispatcher, webhookID, eventID string, n int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		dl, err := d.Deliveries().Find(context.Background(), webhookID, eventID)
		if err != nil {
			t.Fatal(err)
		}
		if dl.Attempts == n && dl.Status == webhooks.StatusPending {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("delivery of %s: %d attempts, %s; want %d, pending", eventID, dl.Attempts, dl.Status, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestUIFailedDeliverySaysWhy: a delivery whose two attempts were answered 503, not attempted again
// because its endpoint was disabled meanwhile, says so (not "webhook disabled: not attempted" beside
// its two attempts), its timeline ends with that step, and the failed list's Why says why each
// attempted delivery failed; one that failed after its last retry says its last answer, in words.
func TestUIFailedDeliverySaysWhy(t *testing.T) {
	e := newEnvWith(t, func(o *webhooks.Options) { o.RetrySchedule = []time.Duration{50 * time.Millisecond, time.Hour} })
	ctx := context.Background()
	d := e.d
	w, err := d.Webhooks().Create(ctx, webhooks.Webhook{URL: e.rcURL + "/unavailable", Events: []string{"invoice.*"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"inv_retried", "inv_refused"} {
		if _, err := d.Dispatch(ctx, webhooks.Event{Type: "invoice.paid", ID: id}); err != nil {
			t.Fatal(err)
		}
		waitAttempts(t, d, w.ID, id, 2) // the next retry is an hour away
	}
	retried, err := d.Deliveries().Find(ctx, w.ID, "inv_retried")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.RetryNow(ctx, retried.ID); err != nil { // its third and last attempt
		t.Fatal(err)
	}
	waitStatus(t, d, w.ID, "inv_retried", webhooks.StatusFailed)
	w.Disabled = true
	if _, err := d.Webhooks().Update(ctx, *w); err != nil {
		t.Fatal(err)
	}
	refused, err := d.Deliveries().Find(ctx, w.ID, "inv_refused")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.RetryNow(ctx, refused.ID); err != nil { // due now: the worker fails it unattempted
		t.Fatal(err)
	}
	waitStatus(t, d, w.ID, "inv_refused", webhooks.StatusFailed)

	cases := []struct{ id, why, steps string }{
		{refused.ID, "failed after 2 attempts, then not attempted again: the endpoint was disabled",
			`^Created\|Attempt 1: HTTP 503 in [^|]+\|Attempt 2: HTTP 503 in [^|]+\|Failed after 2 attempts, then not attempted again: the endpoint was disabled$`},
		{retried.ID, "failed after 3 attempts; the last: the endpoint answered 503 Service Unavailable",
			`^Created\|Attempt 1: HTTP 503 in [^|]+\|Attempt 2: HTTP 503 in [^|]+\|Attempt 3: HTTP 503 in [^|]+\|Failed after 3 attempts; the last: the endpoint answered 503 Service Unavailable$`},
	}
	for i, tc := range cases {
		e.open("#/deliveries/"+tc.id, "delivery")
		if s := e.text("main"); strings.Contains(s, "webhook disabled") {
			t.Errorf("the delivery page shows the record's code words: %q", s)
		}
		if s := e.text("#delivery-why"); s != tc.why {
			t.Errorf("%s's why: %q, want %q", tc.id, s, tc.why)
		}
		if s := e.eval(timelineSteps); !regexp.MustCompile(tc.steps).MatchString(s) {
			t.Errorf("%s's timeline: %q", tc.id, s)
		}
		if c := e.eval(`(document.querySelector('#timeline li:last-child') || {}).className || ''`); c != "t-bad" {
			t.Errorf("%s's last step is not marked as a failure: %q", tc.id, c)
		}
		e.shot(fmt.Sprintf("60-delivery-failed-why-%d", i))
	}
	for _, route := range []string{"#/webhooks/" + w.ID + "/deliveries?status=failed", "#/deliveries?status=failed"} {
		e.open(route, map[bool]string{true: "search", false: "deliveries"}[strings.HasPrefix(route, "#/deliveries")])
		for _, tc := range cases {
			if s := e.text(`tr[data-id="` + tc.id + `"] td.why`); s != tc.why {
				t.Errorf("%s: the Why of %s: %q, want %q", route, tc.id, s, tc.why)
			}
		}
	}
	e.shot("61-failed-list-why")
	e.noIssues()
}

// TestUIRetryNowRefusedIsNotOfferedAgain: Retry now, offered while the endpoint delivered, and
// refused on the click because the endpoint was paused meanwhile, says why and is then not offered:
// the page shows the endpoint as it is now, and the button says why it is off.
func TestUIRetryNowRefusedIsNotOfferedAgain(t *testing.T) {
	e := pausedEnv(t, func(*webhooks.Options) {})
	ctx := context.Background()
	d := e.d
	e.rc.failing.Store(true)
	w, err := d.Webhooks().Create(ctx, webhooks.Webhook{URL: e.rcURL + "/flaky", Events: []string{"invoice.*"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Dispatch(ctx, webhooks.Event{Type: "invoice.paid", ID: "inv_0"}); err != nil {
		t.Fatal(err)
	}
	dl, err := d.Deliveries().Find(ctx, w.ID, "inv_0")
	if err != nil || dl.Status != webhooks.StatusPending {
		t.Fatalf("the first delivery: %+v, %v", dl, err)
	}
	e.open("#/deliveries/"+dl.ID, "delivery")
	if s := e.eval(`String(document.querySelector('#retry-now').disabled)`); s != "false" {
		t.Fatalf("Retry now is not offered while the endpoint delivers: disabled %s", s)
	}
	// Meanwhile a second failure pauses the endpoint.
	if _, err := d.Dispatch(ctx, webhooks.Event{Type: "invoice.paid", ID: "inv_1"}); err != nil {
		t.Fatal(err)
	}
	if h, err := d.Webhooks().Health(ctx, w.ID); err != nil || h.State != webhooks.CircuitOpen {
		t.Fatalf("the endpoint after two failures: %+v, %v", h, err)
	}
	e.do("retry now", chromedp.Click(chromedp.CSS("#retry-now")))
	e.waitFor("refused, and no longer offered", `document.querySelector('#flash').innerText.includes('paused') &&
		!!document.querySelector('#retry-now') && document.querySelector('#retry-now').disabled`)
	e.page("delivery")
	if s := e.eval(`document.querySelector('#retry-now').title`); s != "The endpoint is paused: its deliveries wait for its next try" {
		t.Errorf("the button's reason: %q", s)
	}
	if s := e.text("#flash"); strings.Contains(strings.ToLower(s), "circuit") || strings.Contains(strings.ToLower(s), "probe") {
		t.Errorf("the refusal: %q", s)
	}
	e.shot("62-retry-now-refused")
	e.noIssues()
}

// TestUIErrorsInWords: what goes wrong is said in words that say what to do: a connection refused is
// "the connection to … was refused" (not Go's dial error) on every page that shows it; an endpoint or
// delivery that does not exist is said so, with a link onwards, in the operator's view and the portal
// (not `webhooks: not found: … (not_found)`); an action on an endpoint deleted meanwhile says so; a
// URL without its scheme is refused beside the field with the API's words ("URL …: write https://…").
func TestUIErrorsInWords(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	d := e.d
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadAddr := ln.Addr().String()
	if err := ln.Close(); err != nil { // nothing listens there now: connections are refused
		t.Fatal(err)
	}
	dead, err := d.Webhooks().Create(ctx, webhooks.Webhook{URL: "http://" + deadAddr + "/hook", Events: []string{"invoice.*"}, Tenant: "acme"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Dispatch(ctx, webhooks.Event{Tenant: "acme", Type: "invoice.paid", ID: "inv_0"}); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, d, dead.ID, "inv_0", webhooks.StatusFailed)
	dl, err := d.Deliveries().Find(ctx, dead.ID, "inv_0")
	if err != nil {
		t.Fatal(err)
	}
	refused := "the connection to " + deadAddr + " was refused"
	for _, p := range []struct{ route, page, sel string }{
		{"#/", "endpoints", `#endpoints tr[data-id="` + dead.ID + `"]`},
		{"#/webhooks/" + dead.ID + "/deliveries", "deliveries", "#deliveries"},
		{"#/deliveries/" + dl.ID, "delivery", "main"},
	} {
		e.open(p.route, p.page)
		if s := e.text(p.sel); !strings.Contains(s, refused) {
			t.Errorf("%s does not say %q: %q", p.route, refused, s)
		}
		e.shot("63-connection-refused-" + p.page)
	}

	// Not found, in the operator's view and the portal.
	e.open("#/webhooks/wh_nope", "error")
	if s := e.text("#error-words"); s != "There is no endpoint wh_nope: it was deleted, or the link is wrong." {
		t.Errorf("an unknown endpoint: %q", s)
	}
	if h := e.eval(`document.querySelector('main a').getAttribute('href')`); h != "#/" {
		t.Errorf("an unknown endpoint's page links to %q", h)
	}
	e.shot("64-endpoint-not-found")
	e.open("#/deliveries/dlv_nope", "error")
	if s := e.text("#error-words"); !strings.HasPrefix(s, "There is no delivery dlv_nope: it has expired") {
		t.Errorf("an unknown delivery: %q", s)
	}
	e.openPortal("acme", "#/webhooks/wh_nope", "error")
	if s := e.text("#error-words"); s != "There is no endpoint wh_nope among yours: it was deleted, or the link is wrong." {
		t.Errorf("an unknown endpoint in the portal: %q", s)
	}
	e.shot("65-portal-endpoint-not-found")

	// An action on an endpoint deleted behind the page's back.
	e.open("#/webhooks/"+dead.ID, "endpoint")
	if err := d.Webhooks().Delete(ctx, dead.ID); err != nil {
		t.Fatal(err)
	}
	e.do("send a test event", chromedp.Click(chromedp.CSS("#send-test")))
	e.waitFor("refused", `document.querySelector('#flash').innerText !== ''`)
	if s := e.text("#flash"); !strings.HasPrefix(s, "It no longer exists") {
		t.Errorf("a test send to a deleted endpoint: %q", s)
	}
	e.shot("66-action-on-deleted-endpoint")

	// A URL without its scheme: the API's field error beside the field.
	e.open("#/new", "new")
	e.do("a URL without its scheme", chromedp.SendKeys(chromedp.CSS("#f-url"), "localhost:8080/hook"), chromedp.Click(chromedp.CSS("#save")))
	e.waitFor("the error beside the URL", `!!document.querySelector('#err-f-url')`)
	if s, want := e.text("#err-f-url"), `URL "localhost:8080/hook" is not of the form scheme://host/…: write https://localhost:8080/hook (or http://).`; s != want {
		t.Errorf("the URL's error: %q, want %q", s, want)
	}
	if s := e.text("#flash"); s != "" {
		t.Errorf("a banner besides the field's error: %q", s)
	}
	e.shot("67-url-without-scheme")
	// The words of the API's messages, on known values: prefixes gone however often they repeat.
	for msg, want := range map[string]string{
		`webhooks: invalid webhook: url host: webhooks: blocked address 10.0.0.1: set Options.AllowedNetworks`: "Blocked address 10.0.0.1: set Options.AllowedNetworks.",
		`webhooks: not found: webhook "wh_1"`:                                   `Webhook "wh_1".`,
		`webhooks: the delivery cannot be retried now: an attempt is in flight`: "An attempt is in flight.",
	} {
		if got := e.eval(`webhooksFormat.plain(` + jsString(msg) + `)`); got != want {
			t.Errorf("plain(%q) = %q, want %q", msg, got, want)
		}
	}
	e.noIssues()
}

// TestUISkippedDeliverySaysWhy: a delivery its endpoint's transformation skipped says so, on its page
// (why, and a last timeline step) and in the lists filtered by its status.
func TestUISkippedDeliverySaysWhy(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	w, err := e.d.Webhooks().Create(ctx, webhooks.Webhook{URL: e.rcURL + "/ok", Events: []string{"invoice.*"},
		Transform: `event.data.amount >= 1000 ? event.data : null`})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.d.Dispatch(ctx, webhooks.Event{Type: "invoice.paid", ID: "inv_small", Data: map[string]int{"amount": 5}}); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, e.d, w.ID, "inv_small", webhooks.StatusSkipped)
	dl, err := e.d.Deliveries().Find(ctx, w.ID, "inv_small")
	if err != nil {
		t.Fatal(err)
	}
	e.open("#/deliveries/"+dl.ID, "delivery")
	why := e.text("#delivery-why")
	if !strings.HasPrefix(why, "skipped: the webhook's transformation gave null") {
		t.Errorf("the skipped delivery's why: %q", why)
	}
	if s := e.eval(timelineSteps); !strings.HasSuffix(s, "|Skipped: the webhook's transformation gave null for this event; nothing was sent") {
		t.Errorf("the skipped delivery's timeline: %q", s)
	}
	e.shot("68-delivery-skipped")
	for route, page := range map[string]string{"#/webhooks/" + w.ID + "/deliveries?status=skipped": "deliveries", "#/deliveries?status=skipped": "search"} {
		e.open(route, page)
		if s := e.text(`tr[data-id="` + dl.ID + `"] td.why`); s != why {
			t.Errorf("%s: the skipped delivery's Why: %q", route, s)
		}
		if v := e.eval(`document.querySelector('select').value`); v != "skipped" {
			t.Errorf("%s: the status filter shows %q", route, v)
		}
	}
	e.noIssues()
}
