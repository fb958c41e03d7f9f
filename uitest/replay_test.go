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

// TestUIReplay: events accepted before an endpoint existed reach it from its page's Replay card, each
// once, and a second replay schedules none.
func TestUIReplay(t *testing.T) {
	e := newEnvWith(t, func(o *webhooks.Options) { o.ReplayIndex = true })
	ctx := context.Background()
	d := e.d
	for i := range 3 {
		if _, err := d.Dispatch(ctx, webhooks.Event{Type: "invoice.paid", ID: fmt.Sprintf("missed_%d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := d.Dispatch(ctx, webhooks.Event{Type: "user.created", ID: "other_0"}); err != nil {
		t.Fatal(err)
	}
	wh, err := d.Webhooks().Create(ctx, webhooks.Webhook{URL: e.rcURL + "/late", Events: []string{"invoice.*"}})
	if err != nil {
		t.Fatal(err)
	}
	base := e.srv.URL + "/ui/"
	e.do("open the new endpoint", chromedp.Navigate(base+"#/webhooks/"+wh.ID))
	e.page("endpoint")
	e.do("replay", chromedp.Click(chromedp.CSS("#replay")))
	e.waitFor("replayed", `document.querySelector('#flash').innerText.includes('Replay: 3 missed events scheduled')`)
	e.shot("20-endpoint-replayed")
	for i := range 3 {
		if _, err := d.Deliveries().Find(ctx, wh.ID, fmt.Sprintf("missed_%d", i)); err != nil {
			t.Errorf("missed_%d: %v", i, err)
		}
	}
	if _, err := d.Deliveries().Find(ctx, wh.ID, "other_0"); err == nil {
		t.Error("an event of a type the endpoint does not subscribe to was replayed")
	}
	e.do("replay again", chromedp.Navigate(base+"#/"), chromedp.Navigate(base+"#/webhooks/"+wh.ID))
	e.page("endpoint")
	e.do("replay again", chromedp.Click(chromedp.CSS("#replay")))
	e.waitFor("nothing more", `document.querySelector('#flash').innerText.includes('Replay: 0 missed events scheduled')`)
	e.noIssues()
}

// TestUIReplayOffNotOffered: without Options.ReplayIndex the endpoint page offers no Replay form (it
// could only fail): the operator reads why; the portal shows nothing of it.
func TestUIReplayOffNotOffered(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	wh, err := e.d.Webhooks().Create(ctx, webhooks.Webhook{URL: e.rcURL + "/ok", Events: []string{"invoice.*"}, Tenant: "acme"})
	if err != nil {
		t.Fatal(err)
	}
	e.do("the endpoint", chromedp.Navigate(e.srv.URL+"/ui/#/webhooks/"+wh.ID))
	e.page("endpoint")
	if e.eval(`String(!!document.querySelector('#replay-form, #replay'))`) != "false" {
		t.Error("the Replay form is offered with Options.ReplayIndex off")
	}
	if s, want := e.text("#replay-off"), "Replaying missed events needs Options.ReplayIndex, which is off: only events accepted while it is on can be replayed."; s != want {
		t.Errorf("the operator's note: %q, want %q", s, want)
	}
	if e.eval(`String(!!document.querySelector('#recover-form'))`) != "true" {
		t.Error("the Recover form is not offered")
	}
	e.shot("45-endpoint-replay-off")
	token, err := e.d.PortalToken("acme", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	e.do("the portal's endpoint", chromedp.Navigate(e.srv.URL+"/portal/ui/#token="+token), chromedp.Navigate(e.srv.URL+"/portal/ui/#/webhooks/"+wh.ID))
	e.page("endpoint")
	if s := e.text("main"); strings.Contains(s, "Replay") || strings.Contains(s, "ReplayIndex") {
		t.Errorf("the portal's endpoint page mentions Replay: %q", s)
	}
	e.noIssues()
}
