package uitest

import (
	"context"
	"errors"
	"net/url"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/smartdrop/webhooks"
)

// fakeBroker is a destination of the schemes nats and mem that keeps nothing: it answers with a
// receipt, or, while failing is set, with a broker's refusal in words.
type fakeBroker struct{ failing atomic.Bool }

func (*fakeBroker) Schemes() []string    { return []string{"nats", "mem"} }
func (*fakeBroker) Check(*url.URL) error { return nil }

func (b *fakeBroker) Send(_ context.Context, m *webhooks.Message) error {
	if b.failing.Load() {
		return errors.New("no stream takes subject orders")
	}
	m.Response = "stream ORDERS, sequence 42"
	return nil
}

// TestUIBrokerDestination: an endpoint whose URL picks a broker shows its kind (NATS; an unknown
// scheme by its name) in the list and on its page, beside HTTP ones; a broker's delivery reads as one:
// no method, no HTTP status, its attempts taken or not with the broker's receipt or words, in the
// operator's view and the portal.
func TestUIBrokerDestination(t *testing.T) {
	b := &fakeBroker{}
	e := newEnvWith(t, func(o *webhooks.Options) { o.Destinations = []webhooks.Destination{b} })
	ctx := context.Background()
	d := e.d
	create := func(u, typ string) *webhooks.Webhook {
		w, err := d.Webhooks().Create(ctx, webhooks.Webhook{URL: u, Events: []string{typ}, Tenant: "acme"})
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	nats := create("nats://orders:s3cret@127.0.0.1:4222/orders", "order.*")
	mem := create("mem://box.example/b1", "user.*")
	web := create(e.rcURL+"/ok", "invoice.*")
	for _, evt := range []webhooks.Event{{Tenant: "acme", Type: "order.paid", ID: "o1"}, {Tenant: "acme", Type: "invoice.paid", ID: "i1"}} {
		if _, err := d.Dispatch(ctx, evt); err != nil {
			t.Fatal(err)
		}
	}
	b.failing.Store(true)
	if _, err := d.Dispatch(ctx, webhooks.Event{Tenant: "acme", Type: "order.paid", ID: "o2"}); err != nil {
		t.Fatal(err)
	}
	waitFailed(t, d, nats.ID, 1)
	taken, err := d.Deliveries().Find(ctx, nats.ID, "o1")
	if err != nil || taken.Status != webhooks.StatusSuccess {
		t.Fatalf("the broker's delivery: %+v, %v", taken, err)
	}
	notTaken, err := d.Deliveries().Find(ctx, nats.ID, "o2")
	if err != nil {
		t.Fatal(err)
	}

	e.open("#/", "endpoints")
	for id, kind := range map[string]string{nats.ID: "NATS", mem.ID: "mem", web.ID: "HTTP"} {
		if s := e.text(`#endpoints tr[data-id="` + id + `"] td.kind`); s != kind {
			t.Errorf("the list's destination of %s: %q, want %q", id, s, kind)
		}
	}
	if page := e.eval(`document.documentElement.outerHTML`); strings.Contains(page, "s3cret") {
		t.Error("the broker's password is in the page")
	}
	e.shot("73-endpoints-destinations")
	e.open("#/webhooks/"+nats.ID, "endpoint")
	if s := e.text("#destination-kind"); s != "NATS" {
		t.Errorf("the endpoint page's destination: %q", s)
	}
	e.shot("74-endpoint-nats")

	http := regexp.MustCompile(`\bPOST\b|\bHTTP\b|Status code|Method`)
	e.open("#/deliveries/"+taken.ID, "delivery")
	if s := e.text("main"); http.MatchString(s) {
		t.Errorf("a broker's delivery speaks HTTP: %q", http.FindAllString(s, -1))
	}
	steps := e.eval(timelineSteps)
	if !regexp.MustCompile(`^Created\|Attempt 1: taken by the broker \(stream ORDERS, sequence 42\) in [^|]+$`).MatchString(steps) {
		t.Errorf("the broker delivery's timeline: %q", steps)
	}
	if c := e.eval(`document.querySelector('#timeline li:last-child').className`); c != "t-ok" {
		t.Errorf("the broker's attempt that succeeded is marked %q", c)
	}
	if s := e.text("#attempts tbody"); !strings.Contains(s, "taken") || !strings.Contains(s, "stream ORDERS, sequence 42") {
		t.Errorf("the broker delivery's attempts: %q", s)
	}
	if s := e.text("#request h2"); s != "Message" {
		t.Errorf("the broker delivery's request card: %q", s)
	}
	e.shot("75-delivery-nats")
	e.open("#/deliveries/"+notTaken.ID, "delivery")
	if s := e.text("main"); http.MatchString(s) || !strings.Contains(s, "no stream takes subject orders") {
		t.Errorf("a broker's failed delivery: %q", s)
	}
	e.open("#/webhooks/"+nats.ID+"/deliveries", "deliveries")
	answers := e.eval(`[...document.querySelectorAll('#deliveries tbody tr')].map((r) => r.querySelector('td[data-label="Last answer"]').textContent).join(',')`)
	if answers != "not taken,taken" {
		t.Errorf("the broker's deliveries' last answers: %q", answers)
	}
	if s := e.text("#deliveries thead"); http.MatchString(s) {
		t.Errorf("the broker's deliveries list speaks HTTP: %q", s)
	}
	e.openPortal("acme", "#/webhooks/"+nats.ID, "endpoint")
	if s := e.text("#destination-kind"); s != "NATS" {
		t.Errorf("the portal's destination: %q", s)
	}
	e.noIssues()
}
