package uitest

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/smartdrop/webhooks"
)

// TestUIRecoveredStory: an endpoint's failed deliveries recovered with its page's Recover form show
// as pending (their new attempt failed, a retry is scheduled), then, once the retry succeeds, as not
// failed, on the same page without a reload; the delivery's timeline tells the whole story.
func TestUIRecoveredStory(t *testing.T) {
	e := newEnvWith(t, func(o *webhooks.Options) { o.RetrySchedule = []time.Duration{1500 * time.Millisecond} })
	ctx := context.Background()
	d, rc := e.d, e.rc
	rc.failing.Store(true)
	flaky, err := d.Webhooks().Create(ctx, webhooks.Webhook{URL: e.rcURL + "/flaky", Events: []string{"invoice.*"}})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if _, err := d.Dispatch(ctx, webhooks.Event{Type: "invoice.paid", ID: fmt.Sprintf("inv_%d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	waitFailed(t, d, flaky.ID, 2)
	// The endpoint is back, but for the next two requests: Recover's attempts fail, their retries succeed.
	rc.failing.Store(false)
	rc.failNext.Store(2)

	e.do("the endpoint", chromedp.Navigate(e.srv.URL+"/ui/#/webhooks/"+flaky.ID))
	e.page("endpoint")
	if c := e.text("#delivery-counts"); c != "2 of the latest 2 deliveries failed for good" {
		t.Errorf("the counts before Recover: %q", c)
	}
	e.do("mark the page (a reload forgets it), recover",
		chromedp.Evaluate[chromedp.Void](`window.storyMark = 'same page'`), chromedp.Click(chromedp.CSS("#recover")))
	e.waitFor("the recovered deliveries pending", `document.querySelector('#flash').innerText.includes('Recover: 2 failed deliveries sent again.') &&
		document.querySelector('#delivery-counts').textContent === '2 pending · none of the latest 2 deliveries failed for good'`)
	e.shot("41-recovered-pending")
	e.waitFor("the recovered deliveries succeeded", `document.querySelector('#delivery-counts').textContent === 'none of the latest 2 deliveries failed for good'`)
	if m := e.eval(`String(window.storyMark)`); m != "same page" {
		t.Errorf("the page was reloaded (mark %q)", m)
	}
	e.page("endpoint")
	e.shot("42-recovered-succeeded")

	inv, err := d.Deliveries().Find(ctx, flaky.ID, "inv_0")
	if err != nil || inv.Status != webhooks.StatusSuccess {
		t.Fatalf("inv_0 after Recover: %+v, %v", inv, err)
	}
	e.do("the recovered delivery", chromedp.Navigate(e.srv.URL+"/ui/#/deliveries/"+inv.ID))
	e.page("delivery")
	if s := e.text("#delivery-status"); s != "success" {
		t.Errorf("the recovered delivery's status: %q", s)
	}
	steps := e.eval(timelineSteps)
	want := `^Created\|Attempt 1: HTTP 500 in [^|]+\|Attempt 2: HTTP 500 in [^|]+\|Sent again \(redelivered\)\|Attempt 3: HTTP 500 in [^|]+\|Attempt 4: HTTP 200 in [^|]+$`
	if !regexp.MustCompile(want).MatchString(steps) {
		t.Errorf("the recovered delivery's timeline: %q", steps)
	}
	e.shot("43-recovered-delivery")
	e.noIssues()
}

// TestUIResentStory: "Send again" on a delivery that succeeded moments ago sends nothing and says so;
// later it makes one more attempt, shown in its attempts and timeline, and the receiver gets it with
// the same webhook-id as the first.
func TestUIResentStory(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	d, rc := e.d, e.rc
	ok, err := d.Webhooks().Create(ctx, webhooks.Webhook{URL: e.rcURL + "/ok", Events: []string{"invoice.*"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Dispatch(ctx, webhooks.Event{Type: "invoice.paid", ID: "inv_lost"}); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, d, ok.ID, "inv_lost", webhooks.StatusSuccess)
	dl, err := d.Deliveries().Find(ctx, ok.ID, "inv_lost")
	if err != nil {
		t.Fatal(err)
	}

	e.do("the delivery", chromedp.Navigate(e.srv.URL+"/ui/#/deliveries/"+dl.ID))
	e.page("delivery")
	if l := e.text("#redeliver"); l != "Send again" {
		t.Fatalf("the button on a delivery that succeeded: %q", l)
	}
	// At once (a repeated click, the delivery just sent): not sent again, and the page says why.
	e.do("send again at once", chromedp.Click(chromedp.CSS("#redeliver")))
	e.waitFor("not sent again", `document.querySelector('#flash').innerText.includes('Not sent again: the delivery is success and was attempted moments ago.')`)
	if n := rc.count.Load(); n != 1 {
		t.Errorf("the receiver got %d requests after Send again at once, want 1", n)
	}
	// Later, when the receiver says it lost it: sent once more.
	time.Sleep(time.Until(dl.UpdatedAt.Add(5*time.Second + 100*time.Millisecond)))
	e.do("send again", chromedp.Click(chromedp.CSS("#redeliver")))
	e.waitFor("sent again", `document.querySelector('#flash').innerText.includes('Sent again: the delivery is now success.') &&
		document.querySelectorAll('#attempts tbody tr').length === 2`)
	e.page("delivery")
	codes := e.eval(`[...document.querySelectorAll('#attempts tbody tr')].map((r) => r.querySelector('td[data-label="#"]').textContent + ':' +
		r.querySelector('td[data-label="Status code"]').textContent).join(',')`)
	if codes != "1:200,2:200" {
		t.Errorf("the attempts: %q", codes)
	}
	steps := e.eval(timelineSteps)
	if want := `^Created\|Attempt 1: HTTP 200 in [^|]+\|Sent again \(redelivered\)\|Attempt 2: HTTP 200 in [^|]+$`; !regexp.MustCompile(want).MatchString(steps) {
		t.Errorf("the resent delivery's timeline: %q", steps)
	}
	if s := e.text("#delivery-status"); s != "success" {
		t.Errorf("the resent delivery's status: %q", s)
	}
	if ids := rc.webhookIDs(); !slices.Equal(ids, []string{dl.ID, dl.ID}) {
		t.Errorf("the receiver's webhook-ids: %q, want %s twice", ids, dl.ID)
	}
	e.shot("44-resent-delivery")
	e.noIssues()
}
