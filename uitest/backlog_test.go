package uitest

import (
	"context"
	"fmt"
	"regexp"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/smartdrop/webhooks"
)

// TestUIBacklogSaysWhatHoldsDeliveries: deliveries due now that a paused or a disabled endpoint holds
// are not shown as waiting for a worker: the Backlog page counts them apart and says, per endpoint,
// what holds them (paused until when, after how many failures; disabled, and why).
func TestUIBacklogSaysWhatHoldsDeliveries(t *testing.T) {
	e := newEnvWith(t, func(o *webhooks.Options) {
		o.BreakAfter, o.BreakFor, o.RetrySchedule = 2, 10*time.Minute, []time.Duration{time.Hour}
	})
	// No worker: what Enqueue makes due stays due (a worker would park the paused endpoint's, and fail
	// the disabled endpoint's; either way they never wait for a worker).
	e.stopWorker()
	ctx := context.Background()
	d, rc := e.d, e.rc
	rc.failing.Store(true)
	create := func(path string, events ...string) *webhooks.Webhook {
		w, err := d.Webhooks().Create(ctx, webhooks.Webhook{URL: e.rcURL + path, Events: events})
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	flaky, off, ok := create("/flaky", "invoice.*"), create("/off", "order.*"), create("/ok", "user.*")
	enqueue := func(typ string, n int) {
		for i := range n {
			if _, err := d.Enqueue(ctx, webhooks.Event{Type: typ, ID: fmt.Sprintf("%s_%d", typ, i)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	enqueue("invoice.created", 3)
	enqueue("order.created", 2)
	enqueue("user.created", 1)
	for i := range 2 { // two failed attempts open the flaky endpoint's circuit
		if _, err := d.Dispatch(ctx, webhooks.Event{Type: "invoice.paid", ID: fmt.Sprintf("inv_%d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	if h, err := d.Webhooks().Health(ctx, flaky.ID); err != nil || h.State != webhooks.CircuitOpen {
		t.Fatalf("the flaky endpoint's circuit: %+v, %v", h, err)
	}
	off.Disabled, off.DisabledReason = true, "paused for the billing migration"
	if _, err := d.Webhooks().Update(ctx, *off); err != nil {
		t.Fatal(err)
	}
	st, err := d.Stats(ctx)
	if err != nil || st.Due != 6 {
		t.Fatalf("stats: %+v, %v (want 6 due)", st, err)
	}

	e.do("open the backlog", chromedp.Navigate(e.srv.URL+"/ui/#/backlog"))
	e.page("backlog")
	if s := e.text("#backlog-due"); s != "1" {
		t.Errorf("waiting for a worker: %q, want 1 (the enabled, closed endpoint's delivery)", s)
	}
	if s := e.text("#backlog-held-due"); s != "5" {
		t.Errorf("held: %q, want 5", s)
	}
	paused := regexp.MustCompile(`^3 for ` + regexp.QuoteMeta(flaky.URL) +
		` held: the endpoint is paused after 2 failures, next try \d\d:\d\d:\d\d UTC$`)
	if s := e.text(`#backlog-held li[data-id="` + flaky.ID + `"]`); !paused.MatchString(s) {
		t.Errorf("the paused endpoint's held deliveries: %q", s)
	}
	if s, want := e.text(`#backlog-held li[data-id="`+off.ID+`"]`), "2 for "+off.URL+" held: the endpoint is disabled: paused for the billing migration"; s != want {
		t.Errorf("the disabled endpoint's held deliveries: %q, want %q", s, want)
	}
	if s := e.text(`#backlog-held li[data-id="` + ok.ID + `"]`); s != "" {
		t.Errorf("the delivering endpoint is listed as held: %q", s)
	}
	if s := e.text("#backlog-oldest"); !regexp.MustCompile(`behind, held deliveries included\)$`).MatchString(s) {
		t.Errorf("the oldest due: %q", s)
	}
	e.shot("40-backlog-held")
	e.noIssues()
}
