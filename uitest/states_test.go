package uitest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/smartdrop/webhooks"
)

// pausedEnv is an env whose breaker pauses an endpoint after two failures for ten minutes, and retries
// a failed attempt an hour later.
func pausedEnv(t *testing.T, tune func(*webhooks.Options)) *env {
	return newEnvWith(t, func(o *webhooks.Options) {
		o.BreakAfter, o.BreakFor, o.RetrySchedule = 2, 10*time.Minute, []time.Duration{time.Hour}
		tune(o)
	})
}

// pause makes an endpoint of path, subscribed to typ, fail n events (the receiver's /flaky failing):
// two failed attempts pause it.
func (e *env) pause(path, typ string, n int) *webhooks.Webhook {
	e.t.Helper()
	ctx := context.Background()
	e.rc.failing.Store(true)
	w, err := e.d.Webhooks().Create(ctx, webhooks.Webhook{URL: e.rcURL + path, Events: []string{typ}, Tenant: "acme"})
	if err != nil {
		e.t.Fatal(err)
	}
	for i := range n {
		if _, err := e.d.Dispatch(ctx, webhooks.Event{Tenant: "acme", Type: typ, ID: fmt.Sprintf("%s_%d", typ, i)}); err != nil {
			e.t.Fatal(err)
		}
	}
	if h, err := e.d.Webhooks().Health(ctx, w.ID); err != nil || h.State != webhooks.CircuitOpen {
		e.t.Fatalf("the endpoint's circuit after %d failures: %+v, %v", n, h, err)
	}
	return w
}

// open navigates to a route of the operator's UI and waits for its page.
func (e *env) open(route, page string) {
	e.t.Helper()
	e.do("open "+route, chromedp.Navigate(e.srv.URL+"/ui/"+route))
	e.page(page)
	if page == "endpoints" {
		e.waitFor("states loaded", `!document.querySelector('#endpoints') || !document.querySelector('#endpoints').innerText.includes('…')`)
	}
}

// openPortal opens the portal with a token of tenant, then a route of it.
func (e *env) openPortal(tenant, route, page string) {
	e.t.Helper()
	token, err := e.d.PortalToken(tenant, time.Hour)
	if err != nil {
		e.t.Fatal(err)
	}
	e.do("open the portal", chromedp.Navigate(e.srv.URL+"/portal/ui/#token="+token))
	e.page("endpoints")
	e.do("open the portal's "+route, chromedp.Navigate(e.srv.URL+"/portal/ui/"+route))
	e.page(page)
	if page == "endpoints" {
		e.waitFor("states loaded", `!document.querySelector('#endpoints') || !document.querySelector('#endpoints').innerText.includes('…')`)
	}
}

// TestUIBacklogPausedIsNotDisabled: an endpoint paused and then disabled is disabled, not paused: the
// Backlog's "Paused endpoints" counts the endpoints the overview shows as paused, and not the disabled
// one (whose circuit stays open).
func TestUIBacklogPausedIsNotDisabled(t *testing.T) {
	e := pausedEnv(t, func(*webhooks.Options) {})
	ctx := context.Background()
	paused := e.pause("/flaky?paused", "invoice.paid", 2)
	off := e.pause("/flaky?off", "order.paid", 2)
	off.Disabled, off.DisabledReason = true, "paused for the billing migration"
	if _, err := e.d.Webhooks().Update(ctx, *off); err != nil {
		t.Fatal(err)
	}

	e.open("#/", "endpoints")
	states := e.eval(`[...document.querySelectorAll('#endpoints tbody tr')].map((r) => r.dataset.id + '=' + r.querySelector('td[data-label=State] .status').textContent).join('\n')`)
	pausedRows := strings.Count(states, "=paused after")
	if pausedRows != 1 || !strings.Contains(states, paused.ID+"=paused after 2 failures") || !strings.Contains(states, off.ID+"=not delivering: the endpoint is disabled") {
		t.Errorf("the overview's states:\n%s", states)
	}
	e.shot("59-overview-paused-and-disabled")
	e.open("#/backlog", "backlog")
	if n := e.text("#backlog-open"); n != fmt.Sprint(pausedRows) {
		t.Errorf("the Backlog's paused endpoints: %q, the overview shows %d paused", n, pausedRows)
	}
	if b := e.text("#backlog"); strings.Contains(strings.ToLower(b), "circuit") {
		t.Errorf("the Backlog speaks of circuits: %q", b)
	}
	e.shot("51-backlog-paused-not-disabled")
	e.noIssues()
}

// TestUIDisableHasOneReason: an endpoint paused after failures, then disabled by the operator on its
// page, shows one reason for it on every page: the one the disable gave ("disabled by an operator"),
// never the failures that paused it as if they had disabled it.
func TestUIDisableHasOneReason(t *testing.T) {
	e := pausedEnv(t, func(*webhooks.Options) {})
	ctx := context.Background()
	w := e.pause("/flaky", "invoice.paid", 2)
	e.open("#/webhooks/"+w.ID, "endpoint")
	e.do("disable it", chromedp.Click(chromedp.CSS("#toggle")))
	e.waitFor("disabled", `!!document.querySelector('#disabled-why')`)
	got, err := e.d.Webhooks().Get(ctx, w.ID)
	if err != nil || !got.Disabled {
		t.Fatalf("after Disable: %+v, %v", got, err)
	}
	reason := got.DisabledReason
	if reason == "" {
		t.Fatal("the disable gave no reason")
	}
	onPage := e.text("#disabled-why") + " · " + e.text("#delivery-state")
	e.shot("52-endpoint-disabled-one-reason")
	e.open("#/", "endpoints")
	inList := e.text(`#endpoints tr[data-id="` + w.ID + `"]`)
	e.shot("53-endpoints-disabled-one-reason")
	dl, err := e.d.Deliveries().Find(ctx, w.ID, "invoice.paid_0")
	if err != nil {
		t.Fatal(err)
	}
	e.open("#/deliveries/"+dl.ID, "delivery")
	onDelivery := e.text("#delivery-why")
	e.shot("54-delivery-of-disabled-endpoint")
	for where, s := range map[string]string{"the endpoint page": onPage, "the list": inList, "the delivery page": onDelivery} {
		if !strings.Contains(s, reason) {
			t.Errorf("%s does not give the disable's reason %q: %q", where, reason, s)
		}
		if strings.Contains(s, "after 2 failures") || strings.Contains(s, "Internal Server Error") {
			t.Errorf("%s gives the failures as a second reason: %q", where, s)
		}
	}
	e.noIssues()
}

// TestUIOneVocabulary: a paused endpoint is "paused" on every page that shows it (the list, its page,
// its deliveries, a delivery waiting for it, the backlog, the portal), never "circuit open" or
// "probe"; the button that ends the pause says "Try now".
func TestUIOneVocabulary(t *testing.T) {
	e := pausedEnv(t, func(*webhooks.Options) {})
	ctx := context.Background()
	w := e.pause("/flaky", "invoice.paid", 3) // two failures pause it; the third delivery waits for its next try
	parked, err := e.d.Deliveries().Find(ctx, w.ID, "invoice.paid_2")
	if err != nil {
		t.Fatal(err)
	}
	words := func(where string) {
		t.Helper()
		s := e.eval(`document.querySelector('main').innerText + ' ' + [...document.querySelectorAll('main [title]')].map((x) => x.title).join(' ')`)
		low := strings.ToLower(s)
		for _, other := range []string{"circuit", "probe"} {
			if strings.Contains(low, other) {
				t.Errorf("%s says %q (the state is named \"paused\" everywhere): %q", where, other, s)
			}
		}
		if !strings.Contains(s, "paused") {
			t.Errorf("%s does not say the endpoint is paused: %q", where, s)
		}
	}
	e.open("#/", "endpoints")
	words("the list")
	e.open("#/webhooks/"+w.ID, "endpoint")
	words("the endpoint page")
	if b := e.text("#probe-now"); b != "Try now" {
		t.Errorf("the button that ends the pause: %q", b)
	}
	e.shot("55-endpoint-paused-vocabulary")
	e.open("#/webhooks/"+w.ID+"/deliveries", "deliveries")
	words("its deliveries")
	e.open("#/deliveries/"+parked.ID, "delivery")
	words("a delivery waiting for its next try")
	e.shot("56-delivery-paused-vocabulary")
	e.open("#/backlog", "backlog")
	if b := strings.ToLower(e.text("#backlog")); strings.Contains(b, "circuit") || strings.Contains(b, "probe") {
		t.Errorf("the backlog: %q", b)
	}
	e.openPortal("acme", "#/webhooks/"+w.ID, "endpoint")
	words("the portal's endpoint page")
	e.noIssues()
}

// TestUINextTryOnlyWhenWaiting: an endpoint paused, whose pause is over but to which no delivery is due
// (its deliveries retry in an hour), does not say "next try any moment": no try is coming. The words
// name a next try only when a delivery waits for it.
func TestUINextTryOnlyWhenWaiting(t *testing.T) {
	e := pausedEnv(t, func(o *webhooks.Options) { o.BreakFor = 300 * time.Millisecond })
	ctx := context.Background()
	w := e.pause("/flaky", "invoice.paid", 2)
	deadline := time.Now().Add(10 * time.Second)
	for {
		h, err := e.d.Webhooks().Health(ctx, w.ID)
		if err != nil {
			t.Fatal(err)
		}
		if h.State == webhooks.CircuitOpen && time.Now().After(h.OpenUntil) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the pause did not end: %+v", h)
		}
		time.Sleep(20 * time.Millisecond)
	}
	e.open("#/", "endpoints")
	row := e.text(`#endpoints tr[data-id="` + w.ID + `"]`)
	e.open("#/webhooks/"+w.ID, "endpoint")
	state := e.text("#delivery-state")
	e.shot("57-endpoint-pause-over-nothing-waits")
	for where, s := range map[string]string{"the list": row, "the endpoint page": state} {
		if strings.Contains(s, "any moment") || strings.Contains(s, "next try ") || !strings.Contains(s, "no delivery waits") {
			t.Errorf("%s, with no delivery due: %q", where, s)
		}
	}
	// The words for each case, on known values.
	past, future := time.Now().Add(-time.Minute).UTC().Format(time.RFC3339), time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	for expr, want := range map[string]string{
		`webhooksFormat.circuit({state: 'open', consecutive_failures: 2, open_until: '` + past + `'}, {parked: 1}).text`:   "paused after 2 failures, next try any moment",
		`webhooksFormat.circuit({state: 'open', consecutive_failures: 2, open_until: '` + past + `'}, {parked: 0}).text`:   "paused after 2 failures; its pause is over, and no delivery waits: the next one due tries it",
		`webhooksFormat.circuit({state: 'open', consecutive_failures: 2, open_until: '` + future + `'}, {parked: 0}).text`: "paused after 2 failures until ",
	} {
		if got := e.eval(expr); !strings.HasPrefix(got, want) {
			t.Errorf("%s = %q, want %q…", expr, got, want)
		}
	}
	e.noIssues()
}
