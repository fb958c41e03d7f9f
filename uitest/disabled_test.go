package uitest

import (
	"context"
	"regexp"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/smartdrop/webhooks"
)

// TestUIDisabledEndpointSaysWhy: a disabled endpoint's page says it is disabled, why in words, and
// since when, in UTC, and that nothing is delivered (not a circuit's "delivering" or "next try");
// enabling it from the page takes the reason away.
func TestUIDisabledEndpointSaysWhy(t *testing.T) {
	e := newEnvWith(t, func(o *webhooks.Options) { o.ReplayIndex = true }) // the Replay form is offered
	ctx := context.Background()
	w, err := e.d.Webhooks().Create(ctx, webhooks.Webhook{URL: e.rcURL + "/off", Events: []string{"invoice.*"}})
	if err != nil {
		t.Fatal(err)
	}
	w.Disabled, w.DisabledReason = true, "paused for the billing migration"
	if _, err := e.d.Webhooks().Update(ctx, *w); err != nil {
		t.Fatal(err)
	}
	base := e.srv.URL + "/ui/"
	e.do("the disabled endpoint", chromedp.Navigate(base+"#/webhooks/"+w.ID))
	e.page("endpoint")
	if s := e.text("#disabled-why"); !regexp.MustCompile(`^disabled paused for the billing migration \(since \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC\)$`).MatchString(s) {
		t.Errorf("the disabled endpoint says: %q", s)
	}
	for _, form := range []string{"#recover-form", "#replay-form"} { // its times are UTC, as every time shown, and say so
		if l := e.text(form + " label"); !regexp.MustCompile(`\(UTC\)$`).MatchString(l) {
			t.Errorf("%s's time label: %q", form, l)
		}
	}
	if s := e.text("#delivery-state"); s != "not delivering: the endpoint is disabled" {
		t.Errorf("a disabled endpoint's delivery state: %q", s)
	}
	e.shot("35-endpoint-disabled")
	e.do("enable", chromedp.Click(chromedp.CSS("#toggle")))
	e.waitFor("enabled", `!document.querySelector('#disabled-why')`)
	got, err := e.d.Webhooks().Get(ctx, w.ID)
	if err != nil || got.Disabled || got.DisabledReason != "" {
		t.Fatalf("after Enable: %+v, %v", got, err)
	}
}
