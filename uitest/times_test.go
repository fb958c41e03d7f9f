package uitest

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/smartdrop/webhooks"
)

// TestUIChartLabelsAreExact: the chart's lines are labelled with the number of attempts they stand
// for: with at most 3 attempts in an hour, the middle line is a whole number, labelled exactly where it
// is drawn (not 1.5 labelled "2").
func TestUIChartLabelsAreExact(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	w, err := e.d.Webhooks().Create(ctx, webhooks.Webhook{URL: e.rcURL + "/ok", Events: []string{"invoice.*"}})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if _, err := e.d.Dispatch(ctx, webhooks.Event{Type: "invoice.paid", ID: fmt.Sprintf("inv_%d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	e.open("#/webhooks/"+w.ID, "endpoint")
	e.waitFor("the chart counts them", `document.querySelector('#chart').getAttribute('aria-label').includes('3 succeeded')`)
	var got struct {
		Labels []struct {
			Text string
			Y    float64
		}
		BarTop, BarBottom float64
	}
	raw := e.eval(`JSON.stringify({
		labels: [...document.querySelectorAll('#chart text.axis')].filter((t) => Number(t.getAttribute('x')) < 36).map((t) => ({text: t.textContent, y: Number(t.getAttribute('y')) - 4})),
		barTop: Math.min(...[...document.querySelectorAll('#chart rect.ok')].map((r) => Number(r.getAttribute('y')))),
		barBottom: Math.max(...[...document.querySelectorAll('#chart rect.ok')].map((r) => Number(r.getAttribute('y')) + Number(r.getAttribute('height')))),
	})`)
	if err := json.Unmarshal([]byte(raw), &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Labels) != 3 {
		t.Fatalf("the chart's labels: %s", raw)
	}
	// The tallest bar is 3 attempts high: a line labelled v is drawn v/3 of its height above the base.
	for _, l := range got.Labels {
		var v float64
		if _, err := fmt.Sscan(l.Text, &v); err != nil || v != math.Trunc(v) {
			t.Errorf("a label that is not a whole number of attempts: %q", l.Text)
			continue
		}
		at := (got.BarBottom - l.Y) / (got.BarBottom - got.BarTop) * 3
		if math.Abs(at-v) > 0.01 {
			t.Errorf("the line labelled %q stands for %.2f attempts (%s)", l.Text, at, raw)
		}
	}
	e.shot("70-chart-labels")
	e.noIssues()
}

// TestUITimesAreUTC: every time the UI shows or reads is UTC, 24-hour, written one way — also in a
// browser in New York with a US locale (where a date-time input reads the browser's zone, in 12-hour
// format): the Recover and Replay forms and the search say "(UTC)", hold "2026-12-03 12:40", and what is
// typed there is read as UTC.
func TestUITimesAreUTC(t *testing.T) {
	e := newEnvWith(t, func(o *webhooks.Options) { o.ReplayIndex = true })
	ctx := context.Background()
	if _, err := chromedp.Call(e.ctx, emulation.SetTimezoneOverride, emulation.SetTimezoneOverrideParams{TimezoneID: "America/New_York"}); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Call(e.ctx, emulation.SetLocaleOverride, emulation.SetLocaleOverrideParams{Locale: "en_US"}); err != nil {
		t.Fatal(err)
	}
	e.rc.failing.Store(true)
	w, err := e.d.Webhooks().Create(ctx, webhooks.Webhook{URL: e.rcURL + "/flaky", Events: []string{"invoice.*"}})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if _, err := e.d.Dispatch(ctx, webhooks.Event{Type: "invoice.paid", ID: fmt.Sprintf("inv_%d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	waitFailed(t, e.d, w.ID, 2)
	e.rc.failing.Store(false)

	e.open("#/webhooks/"+w.ID, "endpoint")
	if off := e.eval(`String(new Date().getTimezoneOffset())`); off == "0" {
		t.Fatal("the browser's zone is UTC: the test cannot tell UTC from the browser's time")
	}
	field := `^\d{4}-\d\d-\d\d \d\d:\d\d$`
	for sel, label := range map[string]string{"r-since": "From (UTC)", "r-until": "to (UTC; empty: now)", "p-since": "Since (UTC)"} {
		if l := e.text(`label[for="` + sel + `"]`); l != label {
			t.Errorf("%s's label: %q, want %q", sel, l, label)
		}
		if v := e.eval(`document.querySelector('#` + sel + `').value`); v != "" && !regexp.MustCompile(field).MatchString(v) {
			t.Errorf("%s holds %q, not a UTC time as the page writes them", sel, v)
		}
	}
	dayAgo, err := time.Parse("2006-01-02 15:04", e.eval(`document.querySelector('#r-since').value`))
	if err != nil || time.Since(dayAgo) < 24*time.Hour-2*time.Minute || time.Since(dayAgo) > 24*time.Hour+2*time.Minute {
		t.Errorf("Recover's from: %v (%v), want a day ago in UTC", dayAgo, err)
	}
	// Typed in UTC, read as UTC: from two hours to an hour ago nothing is recovered; from ten minutes ago
	// both are.
	recover := func(from, to time.Time) string {
		t.Helper()
		until := ""
		if !to.IsZero() {
			until = to.UTC().Format("2006-01-02 15:04")
		}
		e.do("clear the flash", chromedp.Evaluate[chromedp.Void](`document.querySelector('#flash').replaceChildren()`))
		e.do("recover from "+from.String(), clear("#r-since"), chromedp.SendKeys(chromedp.CSS("#r-since"), from.UTC().Format("2006-01-02 15:04")),
			clear("#r-until"), chromedp.SendKeys(chromedp.CSS("#r-until"), until), chromedp.Click(chromedp.CSS("#recover")))
		e.waitFor("recovered", `document.querySelector('#flash').innerText !== ''`)
		return e.text("#flash")
	}
	if s := recover(time.Now().Add(-2*time.Hour), time.Now().Add(-time.Hour)); s != "Recover: 0 failed deliveries sent again." {
		t.Errorf("from two hours to an hour ago (UTC): %q", s)
	}
	if s := recover(time.Now().Add(time.Hour), time.Time{}); s != "From is after to: write the window's start before its end, both in UTC." {
		t.Errorf("from an hour ahead (UTC): %q", s)
	}
	e.shot("71-recover-in-utc")
	e.do("a time that is not one", clear("#r-since"), chromedp.SendKeys(chromedp.CSS("#r-since"), "03/12/2026 1:40 PM"), chromedp.Click(chromedp.CSS("#recover")))
	e.waitFor("refused", `document.querySelector('#flash').innerText.includes('Write the time in UTC')`)
	if s := recover(time.Now().Add(-10*time.Minute), time.Time{}); s != "Recover: 2 failed deliveries sent again." {
		t.Errorf("from ten minutes ago (UTC): %q", s)
	}

	// The search: the same fields, the same zone.
	e.open("#/deliveries", "search")
	for sel, label := range map[string]string{"search-from": "Created from (UTC)", "search-to": "to (UTC)"} {
		if l := e.text(`label[for="` + sel + `"]`); l != label {
			t.Errorf("%s's label: %q, want %q", sel, l, label)
		}
	}
	from := time.Now().Add(-time.Hour).UTC().Truncate(time.Minute)
	e.do("search from an hour ago", chromedp.SendKeys(chromedp.CSS("#search-from"), from.Format("2006-01-02 15:04")), chromedp.Click(chromedp.CSS("#search")))
	e.waitFor("searched", `location.hash.includes('from=')`)
	e.page("search")
	if h := e.eval(`decodeURIComponent(location.hash)`); !strings.Contains(h, "from="+from.Format(time.RFC3339)) {
		t.Errorf("the search's from: %q, want %s", h, from.Format(time.RFC3339))
	}
	if v := e.eval(`document.querySelector('#search-from').value`); v != from.Format("2006-01-02 15:04") {
		t.Errorf("the form keeps from as %q", v)
	}
	e.shot("72-search-in-utc")
	// No page writes a time in 12-hour format or in the browser's zone.
	for _, route := range []string{"#/webhooks/" + w.ID, "#/webhooks/" + w.ID + "/deliveries", "#/deliveries", "#/backlog"} {
		e.open(route, map[string]string{"#/webhooks/" + w.ID: "endpoint", "#/webhooks/" + w.ID + "/deliveries": "deliveries", "#/deliveries": "search", "#/backlog": "backlog"}[route])
		if s := e.text("main"); regexp.MustCompile(`\b(AM|PM)\b|GMT|EST|EDT|your time`).MatchString(s) {
			t.Errorf("%s writes a time other than in UTC: %q", route, s)
		}
	}
	e.noIssues()
}
