package uitest

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/smartdrop/webhooks"
)

// TestUIProbeNow: an endpoint paused for ten minutes after two failures shows why (the status it
// answered, in words) and its waiting, pending and failed deliveries in words, in the list and on its
// page; the portal offers no "Probe now"; the operator's "Probe now", once the endpoint is back, closes
// the circuit within seconds and the parked deliveries are delivered.
func TestUIProbeNow(t *testing.T) {
	e := newEnvWith(t, func(o *webhooks.Options) {
		o.BreakAfter, o.BreakFor, o.RetrySchedule = 2, 10*time.Minute, []time.Duration{time.Hour}
	})
	ctx := context.Background()
	d, rc := e.d, e.rc
	rc.failing.Store(true)
	flaky, err := d.Webhooks().Create(ctx, webhooks.Webhook{URL: e.rcURL + "/flaky", Events: []string{"invoice.*"}, Tenant: "acme"})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 4 { // two failures pause it; two more are parked
		if _, err := d.Dispatch(ctx, webhooks.Event{Tenant: "acme", Type: "invoice.paid", ID: fmt.Sprintf("inv_%d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	rc.failing.Store(false) // back; its circuit does not know for ten minutes
	base := e.srv.URL + "/ui/"

	e.do("open the list", chromedp.Navigate(base))
	e.page("endpoints")
	e.waitFor("states loaded", `!document.querySelector('#endpoints').innerText.includes('…')`)
	if row := e.text(`#endpoints tr[data-id="` + flaky.ID + `"]`); !strings.Contains(row, "2 waiting for the next try · 2 pending · none of the latest 4 deliveries failed for good") {
		t.Errorf("the paused endpoint's row: %q", row)
	}

	token, err := d.PortalToken("acme", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	e.do("the portal's endpoint", chromedp.Navigate(e.srv.URL+"/portal/ui/#token="+token), chromedp.Navigate(e.srv.URL+"/portal/ui/#/webhooks/"+flaky.ID))
	e.page("endpoint")
	if e.eval(`String(!!document.querySelector('#probe-now'))`) != "false" {
		t.Error("the portal offers Probe now")
	}

	// Its deliveries' list says why each waits.
	e.do("its deliveries", chromedp.Navigate(base+"#/webhooks/"+flaky.ID+"/deliveries"))
	e.page("deliveries")
	parked, err := d.Deliveries().Find(ctx, flaky.ID, "inv_3")
	if err != nil {
		t.Fatal(err)
	}
	if row := e.text(`#deliveries tr[data-id="` + parked.ID + `"]`); !strings.Contains(row, "not attempted") || !strings.Contains(row, "waiting: the endpoint is paused after 2 failed attempts in a row") {
		t.Errorf("a parked delivery's row: %q", row)
	}

	e.do("the operator's endpoint", chromedp.Navigate(base+"#/webhooks/"+flaky.ID))
	e.page("endpoint")
	if s := e.text("#delivery-state"); !regexp.MustCompile(`^paused after 2 failures \(the endpoint answered 500 Internal Server Error\), next try (\d{4}-\d\d-\d\d )?\d\d:\d\d:\d\d UTC$`).MatchString(s) {
		t.Errorf("the delivery state: %q", s)
	}
	if c := e.text("#delivery-counts"); c != "2 waiting for the next try · 2 pending · none of the latest 4 deliveries failed for good" {
		t.Errorf("the counts: %q", c)
	}
	e.shot("30-endpoint-paused")
	e.do("probe now", chromedp.Click(chromedp.CSS("#probe-now")))
	e.waitFor("the circuit closed", `document.querySelector('#flash').innerText.includes('delivering again') && document.querySelector('#delivery-state').textContent === 'delivering'`)
	e.page("endpoint")
	if e.eval(`String(!!document.querySelector('#probe-now'))`) != "false" {
		t.Error("Probe now is still offered on a closed circuit")
	}
	h, err := d.Webhooks().Health(ctx, flaky.ID)
	if err != nil || h.State != webhooks.CircuitClosed {
		t.Fatalf("health after the probe: %+v, %v", h, err)
	}
	for _, id := range []string{"inv_2", "inv_3"} {
		waitStatus(t, d, flaky.ID, id, webhooks.StatusSuccess)
	}
	e.do("reload", chromedp.Navigate(base+"#/"), chromedp.Navigate(base+"#/webhooks/"+flaky.ID))
	e.page("endpoint")
	if c := e.text("#delivery-counts"); c != "2 pending · none of the latest 4 deliveries failed for good" {
		t.Errorf("the counts after the probe: %q (the two first deliveries wait an hour for their retry)", c)
	}
	e.shot("31-endpoint-probed")
	e.noIssues()
}

// deliverOne creates w, dispatches evt and waits until w's delivery of it has the status want: the
// webhook and the delivery.
func (e *env) deliverOne(w webhooks.Webhook, evt webhooks.Event, want webhooks.Status) (*webhooks.Webhook, *webhooks.Delivery) {
	e.t.Helper()
	ctx := context.Background()
	created, err := e.d.Webhooks().Create(ctx, w)
	require.NoError(e.t, err)
	_, err = e.d.Dispatch(ctx, evt)
	require.NoError(e.t, err)
	waitStatus(e.t, e.d, created.ID, evt.ID, want)
	dl, err := e.d.Deliveries().Find(ctx, created.ID, evt.ID)
	require.NoError(e.t, err)
	return created, dl
}

// waitStatus waits until a webhook's delivery of an event has a status.
func waitStatus(t *testing.T, d *webhooks.Dispatcher, webhookID, eventID string, want webhooks.Status) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		dl, err := d.Deliveries().Find(context.Background(), webhookID, eventID)
		if err != nil {
			t.Fatal(err)
		}
		if dl.Status == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("delivery of %s: %s, want %s", eventID, dl.Status, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
