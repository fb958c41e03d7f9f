// Package uitest drives the library's web UI in a real browser (headless Chromium, through chromedp)
// against an httptest server with the library on miniredis and a loopback receiver. It is a module of
// its own so that the browser-driving dependency stays out of the library's go.mod.
//
// Chromium is found as "chromium" (or "chromium-browser", "google-chrome") on PATH. Without one the
// tests skip, unless CI is set, when they fail. Screenshots of every page go to $WEBHOOKS_UI_ARTIFACTS
// when set, else to a temporary directory; each is checked not to be blank.
package uitest

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/png"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/redis/go-redis/v9"

	"github.com/smartdrop/webhooks"
)

// chromiumPath finds the browser, or skips the test (fails it under CI).
func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("chromium is not installed (CI is set, so the browser tests must run): apt-get install chromium")
	}
	t.Skip("chromium is not installed; skipping the browser tests (apt-get install chromium to run them)")
	return ""
}

// artifactsDir is where the screenshots go.
func artifactsDir(t *testing.T) string {
	t.Helper()
	if dir := os.Getenv("WEBHOOKS_UI_ARTIFACTS"); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	return t.TempDir()
}

// receiver answers webhooks on loopback: /ok always 200, /flaky 500 while failing is set (and to the
// next failNext requests), /unavailable 503. It keeps each request's webhook-id, in order.
type receiver struct {
	failing  atomic.Bool
	failNext atomic.Int64
	count    atomic.Int64
	mu       sync.Mutex
	ids      []string
	bodies   []string // each request's body, in order
}

// webhookIDs are the webhook-id headers received so far, in order.
func (rc *receiver) webhookIDs() []string {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return slices.Clone(rc.ids)
}

// fails reports whether a request to /flaky fails now, taking one of failNext.
func (rc *receiver) fails() bool {
	for {
		n := rc.failNext.Load()
		if n <= 0 {
			return rc.failing.Load()
		}
		if rc.failNext.CompareAndSwap(n, n-1) {
			return true
		}
	}
}

// received are the bodies received so far, in order.
func (rc *receiver) received() []string {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return slices.Clone(rc.bodies)
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	rc.count.Add(1)
	rc.mu.Lock()
	rc.ids = append(rc.ids, r.Header.Get("Webhook-Id"))
	rc.bodies = append(rc.bodies, string(body))
	rc.mu.Unlock()
	if r.URL.Path == "/unavailable" {
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte(`{"error":"maintenance"}`))
		return
	}
	if r.URL.Path == "/flaky" && rc.fails() {
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = w.Write([]byte(`{"error":"database is down"}`))
		return
	}
	_, _ = w.Write([]byte(`{"received":true}`))
}

// env is the server under test and the browser driving it.
type env struct {
	t      *testing.T
	ctx    context.Context
	d      *webhooks.Dispatcher
	mr     *miniredis.Miniredis // its Redis: a test moves its clock (FastForward) to expire keys
	srv    *httptest.Server
	rc     *receiver
	rcURL  string
	shots  string
	mu     sync.Mutex
	issues []string // console errors, exceptions and CSP violations
	// slowList, when set, makes the operator's GET /webhooks answer 400 ms late (the render race).
	slowList atomic.Bool
	// stopWorker stops the Dispatcher's Run and waits for it to return (once; again is a no-op).
	stopWorker func()
}

// slowList delays the operator's GET /webhooks while slow is set.
func slowList(slow *atomic.Bool, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if slow.Load() && r.Method == http.MethodGet && r.URL.Path == "/webhooks" {
			time.Sleep(400 * time.Millisecond)
		}
		h.ServeHTTP(w, r)
	})
}

func newEnv(t *testing.T) *env { return newEnvWith(t, func(*webhooks.Options) {}) }

// newEnvWith is newEnv with options changed by tune.
func newEnvWith(t *testing.T, tune func(*webhooks.Options)) *env {
	path := chromiumPath(t)
	mr := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	opts := webhooks.Options{
		AllowPrivateNetworks: true, // the receiver is on loopback
		PortalKey:            []byte(strings.Repeat("p", 32)),
		RetrySchedule:        []time.Duration{50 * time.Millisecond},
		BreakAfter:           -1,
		Timeout:              5 * time.Second,
	}
	tune(&opts)
	d, err := webhooks.New(rdb, opts)
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, d: d, mr: mr, rc: &receiver{}, shots: artifactsDir(t)}
	rsrv := httptest.NewServer(e.rc)
	t.Cleanup(rsrv.Close)
	e.rcURL = rsrv.URL

	mux := http.NewServeMux()
	mux.Handle("/portal/", http.StripPrefix("/portal", d.Portal()))
	mux.Handle("/", slowList(&e.slowList, d.Handler()))
	e.srv = httptest.NewServer(mux)
	t.Cleanup(e.srv.Close)

	wctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = d.Run(wctx) }()
	e.stopWorker = func() { stop(); <-done }
	t.Cleanup(e.stopWorker)

	bopts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.Flag("headless", true),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 900),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), bopts...)
	bctx, cancelBrowser := chromedp.NewContext(actx)
	ctx, cancel := context.WithTimeout(bctx, 3*time.Minute)
	t.Cleanup(func() { cancel(); cancelBrowser(); cancelAlloc() })
	e.ctx = ctx
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1280, 900)); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	go func() {
		for m, err := range chromedp.Console(ctx) {
			if err != nil {
				return
			}
			text := m.String()
			if strings.Contains(text, "Failed to load resource") && (strings.Contains(text, "(Bad Request)") || strings.Contains(text, "(Not Found)") || strings.Contains(text, "(Conflict)")) {
				continue // the API's answers the tests ask for: an invalid create, another tenant's id, a refused retry
			}
			if m.IsException() || m.Type == "error" || strings.Contains(text, "Content Security Policy") {
				e.mu.Lock()
				e.issues = append(e.issues, string(m.Type)+": "+text)
				e.mu.Unlock()
			}
		}
	}()
	return e
}

// do runs browser actions, failing the test on error.
func (e *env) do(what string, actions ...chromedp.Action[chromedp.Void]) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(e.ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		e.t.Fatalf("%s: %v", what, err)
	}
}

// eval evaluates a JS expression returning a string.
func (e *env) eval(expr string) string {
	e.t.Helper()
	s, err := chromedp.Run(e.ctx, chromedp.Evaluate[string](expr))
	if err != nil {
		e.t.Fatalf("evaluate %s: %v", expr, err)
	}
	return s
}

// page waits until the app has rendered the named page (main[data-page]).
func (e *env) page(name string) {
	e.t.Helper()
	e.waitFor("page "+name, `document.querySelector('main').dataset.page === `+jsString(name))
}

// waitFor polls a JS condition.
func (e *env) waitFor(what, cond string) {
	e.t.Helper()
	if _, err := chromedp.Run(e.ctx, chromedp.Poll[bool](cond, chromedp.WithPollingTimeout(20*time.Second))); err != nil {
		e.t.Fatalf("%s: %v (at %s, page %q: %s)", what, err, e.eval(`location.href`),
			e.eval(`document.querySelector('main').dataset.page`), e.eval(`document.body.innerText`))
	}
}

// text is the text of the first element matching a CSS selector.
func (e *env) text(sel string) string {
	e.t.Helper()
	return e.eval(`(document.querySelector(` + jsString(sel) + `) || {}).textContent || ''`)
}

func jsString(s string) string { return fmt.Sprintf("%q", s) }

// shot saves a full-page screenshot and checks it is not blank, and that the page says nothing a
// person cannot use (e.clean).
func (e *env) shot(name string) {
	e.t.Helper()
	e.clean(name)
	buf, err := chromedp.Run(e.ctx, chromedp.FullScreenshot(100))
	if err != nil {
		e.t.Fatalf("screenshot %s: %v", name, err)
	}
	img, err := png.Decode(bytes.NewReader(buf))
	if err != nil {
		e.t.Fatalf("screenshot %s: not a PNG: %v", name, err)
	}
	if colours, inked := inspect(img); colours < 16 || inked < 0.01 {
		e.t.Fatalf("screenshot %s looks blank: %d colours, %.2f%% non-background", name, colours, 100*inked)
	}
	file := filepath.Join(e.shots, name+".png")
	if err := os.WriteFile(file, buf, 0o644); err != nil {
		e.t.Fatal(err)
	}
	e.t.Logf("screenshot %s (%dx%d, %d KiB)", file, img.Bounds().Dx(), img.Bounds().Dy(), len(buf)>>10)
}

// cleanJS collects the text on screen (in main and the flash) that a page must never show: a
// JavaScript value written as text ("null" alone or as a value — "Last error: null", "(null)" — but not
// in words such as "gave null for", "undefined", "NaN", "[object …]"), a Go error as such (a
// "webhooks: " prefix, a dial error) or the API's error code in parentheses. JSON shown as JSON (pre
// and code elements: a payload, a schema) is left out.
const cleanJS = `(() => {
	const bad = [/(^|: |\(|= )null(\)|\.|,|$)/, /(^|[^\w.-])(undefined|NaN)([^\w-]|$)/, /\[object \w+\]/, /\bwebhooks: /, /dial (tcp|udp)|connect: connection refused|i\/o timeout/,
		/\((not_found|invalid_request|conflict|internal|not_retryable|probe_refused|webhook_disabled|too_many_requests|exists|tenant_quota|unauthorized)\)/];
	const out = [];
	for (const root of [document.querySelector('main'), document.querySelector('#flash')]) {
		const walk = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
		for (let n = walk.nextNode(); n; n = walk.nextNode()) {
			if (n.parentElement.closest('pre, code')) continue;
			if (bad.some((re) => re.test(n.textContent.trim()))) out.push(n.textContent.trim());
		}
	}
	return out.join(' | ');
})()`

// clean fails the test when the page on screen shows what cleanJS looks for.
func (e *env) clean(name string) {
	e.t.Helper()
	if s := e.eval(cleanJS); s != "" {
		e.t.Errorf("page %s (%s) shows what no page may: %s", name, e.eval(`document.querySelector('main').dataset.page`), s)
	}
}

// timelineSteps is the delivery page's timeline, each step without its time.
const timelineSteps = `[...document.querySelectorAll('#timeline li')].map((li) => li.textContent.replace(/^.*UTC /, '')).join('|')`

// inspect counts an image's distinct colours and the share of pixels unlike its top-left corner.
func inspect(img image.Image) (colours int, inked float64) {
	b := img.Bounds()
	bg := img.At(b.Min.X, b.Min.Y+b.Dy()-1)
	seen := map[[4]uint32]bool{}
	n, other := 0, 0
	for y := b.Min.Y; y < b.Max.Y; y += 2 {
		for x := b.Min.X; x < b.Max.X; x += 2 {
			c := img.At(x, y)
			r, g, bl, a := c.RGBA()
			seen[[4]uint32{r >> 8, g >> 8, bl >> 8, a >> 8}] = true
			if c != bg {
				other++
			}
			n++
		}
	}
	return len(seen), float64(other) / float64(n)
}

// noIssues fails on console errors, exceptions or CSP violations seen so far.
func (e *env) noIssues() {
	e.t.Helper()
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, s := range e.issues {
		e.t.Errorf("browser console: %s", s)
	}
}

// TestUI walks the operator's view and the tenant portal in headless Chromium: create an endpoint (and
// see the API refuse an invalid one), send a test event, see it in the deliveries list and open it,
// redeliver a failed delivery, recover failed deliveries, rotate and reveal the secret, check the
// phone-width layout, and see in the portal only the token's tenant.
func TestUI(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	d, rc := e.d, e.rc

	// Data made through the library: a flaky acme endpoint with failed deliveries, a globex one.
	rc.failing.Store(true)
	flaky, err := d.Webhooks().Create(ctx, webhooks.Webhook{URL: e.rcURL + "/flaky", Events: []string{"invoice.*"},
		Tenant: "acme", Description: "Acme billing", Headers: map[string]string{"X-Api-Key": "k-123"}})
	if err != nil {
		t.Fatal(err)
	}
	globex, err := d.Webhooks().Create(ctx, webhooks.Webhook{URL: e.rcURL + "/ok?globex", Events: []string{"*"},
		Tenant: "globex", Description: "Globex orders"})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if _, err := d.Dispatch(ctx, webhooks.Event{Tenant: "acme", Type: "invoice.paid", ID: fmt.Sprintf("inv_%d", i),
			Data: map[string]any{"amount": 100 * (i + 1)}}); err != nil {
			t.Fatal(err)
		}
		if _, err := d.Dispatch(ctx, webhooks.Event{Tenant: "globex", Type: "order.created", ID: fmt.Sprintf("ord_%d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	failedIDs := waitFailed(t, d, flaky.ID, 3)

	// Operator: the endpoints list shows every tenant's endpoints.
	base := e.srv.URL + "/ui/"
	e.do("open the operator UI", chromedp.Navigate(base))
	e.page("endpoints")
	e.waitFor("circuit and success rate loaded", `!document.querySelector('#endpoints').innerText.includes('…')`)
	list := e.text("#endpoints")
	for _, want := range []string{flaky.URL, globex.URL, "acme", "globex", "Acme billing", "X-Api-Key", "0 of 6 attempts succeeded"} {
		if !strings.Contains(list, want) {
			t.Errorf("operator list lacks %q:\n%s", want, list)
		}
	}

	// Create an endpoint: first an invalid URL, which the API refuses with its own message.
	e.do("open the form", chromedp.Click(chromedp.CSS("#new-endpoint")))
	e.page("new")
	e.do("fill in an invalid URL",
		chromedp.SendKeys(chromedp.CSS("#f-url"), "ftp://example.com/x"),
		chromedp.SendKeys(chromedp.CSS("#f-description"), "Acme orders"),
		clear("#f-events"),
		chromedp.SendKeys(chromedp.CSS("#f-events"), "order.*, webhook.test"),
		chromedp.SendKeys(chromedp.CSS("#f-tenant"), "acme"),
		chromedp.SendKeys(chromedp.CSS("#f-headers"), "X-Team: payments"),
		chromedp.Click(chromedp.CSS("#save")))
	e.waitFor("the API's validation error beside the URL", `!!document.querySelector('#err-f-url')`)
	if msg := e.text("#err-f-url"); msg == "" || strings.Contains(msg, "webhooks:") || strings.Contains(msg, "invalid_request") {
		t.Errorf("the URL's error after an invalid create: %q", msg)
	}
	if msg := e.text("#flash"); msg != "" {
		t.Errorf("a banner besides the field's error: %q", msg)
	}
	e.shot("02-new-endpoint-error")
	url := e.rcURL + "/ok?acme-orders"
	e.do("fix the URL", clear("#f-url"), chromedp.SendKeys(chromedp.CSS("#f-url"), url),
		chromedp.Click(chromedp.CSS("#save")))
	e.page("endpoint")
	created := waitWebhook(t, d, url)
	if created.Tenant != "acme" || created.Headers["X-Team"] != "payments" || len(created.Events) != 2 {
		t.Errorf("created through the UI: %+v", created)
	}
	page := e.eval(`document.documentElement.outerHTML`)
	if strings.Contains(page, created.Secret) {
		t.Error("the secret is in the page before it was revealed")
	}

	// Send a test event, by keyboard.
	e.do("send a test event", chromedp.Focus(chromedp.CSS("#send-test")), chromedp.KeyEvent(kb.Enter))
	e.waitFor("test event sent", `document.querySelector('#flash').innerText.includes('Test event sent')`)
	e.page("endpoint")
	e.waitFor("the chart counts it", `document.querySelector('#chart').getAttribute('aria-label').includes('1 succeeded')`)
	e.shot("03-endpoint")

	// See it in the deliveries list, open it.
	e.do("open the deliveries", chromedp.Click(chromedp.CSS("#show-deliveries")))
	e.page("deliveries")
	if rows := e.eval(`String(document.querySelectorAll('#deliveries tbody tr').length)`); rows != "1" {
		t.Fatalf("deliveries rows: %s", rows)
	}
	if row := e.text("#deliveries tbody tr"); !strings.Contains(row, "webhook.test") || !strings.Contains(row, "success") {
		t.Errorf("the test delivery's row: %q", row)
	}
	e.shot("04-deliveries")
	e.do("open the delivery", chromedp.Click(chromedp.CSS("#deliveries tbody a")))
	e.page("delivery")
	if s := e.text("#delivery-status"); s != "success" {
		t.Errorf("test delivery status %q", s)
	}
	if a := e.text("#attempts"); !strings.Contains(a, "200") || !strings.Contains(a, `{"received":true}`) {
		t.Errorf("attempts table: %q", a)
	}

	// Rotate the secret, then reveal it.
	e.do("back to the endpoint", chromedp.Navigate(base+"#/webhooks/"+created.ID))
	e.page("endpoint")
	e.do("rotate (two steps)", chromedp.Click(chromedp.CSS("#rotate-secret")))
	if label := e.text("#rotate-secret"); !strings.Contains(label, "Rotate now?") {
		t.Errorf("rotate asks first; label %q", label)
	}
	e.do("confirm rotate", chromedp.Click(chromedp.CSS("#rotate-secret")))
	e.waitFor("rotated", `document.querySelector('#flash').innerText.includes('Secret rotated')`)
	rotated, err := d.Webhooks().Get(ctx, created.ID)
	if err != nil {
		t.Fatal(err)
	}
	if rotated.Secret == created.Secret {
		t.Fatal("the secret was not rotated")
	}
	if s := e.text("#secret"); strings.Contains(s, "whsec_") {
		t.Errorf("the secret shows before reveal: %q", s)
	}
	e.do("reveal", chromedp.Click(chromedp.CSS("#reveal-secret")))
	e.waitFor("revealed", `document.querySelector('#secret').textContent.startsWith('whsec_')`)
	if s := e.text("#secret"); s != rotated.Secret {
		t.Errorf("revealed %q, want the new secret", s)
	}

	// Redeliver a failed delivery: filter the flaky endpoint's deliveries by status, open one.
	e.do("open the flaky deliveries", chromedp.Navigate(base+"#/webhooks/"+flaky.ID+"/deliveries"))
	e.page("deliveries")
	e.do("filter failed", chromedp.Evaluate[chromedp.Void](`(() => { const s = document.querySelector('#status-filter'); s.value = 'failed'; s.dispatchEvent(new Event('change')); })()`))
	e.page("deliveries")
	if n := e.eval(`String(document.querySelectorAll('#deliveries tbody tr[data-status="failed"]').length)`); n != "3" {
		t.Fatalf("failed rows: %s", n)
	}
	e.do("open a failed delivery", chromedp.Click(chromedp.CSS(`#deliveries tbody tr[data-id="`+failedIDs[0]+`"] a`)))
	e.page("delivery")
	if a := e.text("#attempts"); !strings.Contains(a, "500") || !strings.Contains(a, "database is down") {
		t.Errorf("failed attempts: %q", a)
	}
	e.shot("05-delivery-failed")
	rc.failing.Store(false)
	e.do("redeliver", chromedp.Click(chromedp.CSS("#redeliver")))
	e.waitFor("redelivered", `document.querySelector('#delivery-status').textContent === 'success'`)
	e.shot("06-delivery-redelivered")

	// Recover the other two failed deliveries.
	e.do("open the flaky endpoint", chromedp.Navigate(base+"#/webhooks/"+flaky.ID))
	e.page("endpoint")
	e.do("recover", chromedp.Click(chromedp.CSS("#recover")))
	e.waitFor("recovered", `document.querySelector('#flash').innerText.includes('Recover: 2 failed')`)
	e.do("reload the endpoint", chromedp.Navigate(base+"#/"), chromedp.Navigate(base+"#/webhooks/"+flaky.ID))
	e.page("endpoint")
	e.waitFor("the chart shows both outcomes", `document.querySelector('#chart').getAttribute('aria-label').includes('3 succeeded, 6 failed')`)
	e.shot("07-endpoint-chart")

	e.do("the list again", chromedp.Navigate(base+"#/"))
	e.page("endpoints")
	e.waitFor("circuit and success rate loaded", `!document.querySelector('#endpoints').innerText.includes('…')`)
	e.shot("01-endpoints")

	// A phone-width screen: no horizontal scrolling, tables as cards.
	e.do("390 px", chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile), chromedp.Navigate(base+"#/"))
	e.page("endpoints")
	e.waitFor("loaded", `!document.querySelector('#endpoints').innerText.includes('…')`)
	e.noHorizontalScroll("the endpoints list")
	e.shot("08-endpoints-390px")
	e.do("390 px endpoint", chromedp.Navigate(base+"#/webhooks/"+flaky.ID))
	e.page("endpoint")
	e.noHorizontalScroll("the endpoint page")
	e.shot("09-endpoint-390px")
	e.do("back to 1280 px", chromedp.EmulateViewport(1280, 900))

	// The portal: only the token's tenant, the token taken out of the URL.
	token, err := d.PortalToken("acme", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	e.do("open the portal without a token", chromedp.Navigate(e.srv.URL+"/portal/ui/"))
	e.page("token")
	e.shot("12-portal-token")
	e.do("open the portal", chromedp.Navigate(e.srv.URL+"/portal/ui/#token="+token))
	e.page("endpoints")
	if loc := e.eval(`location.href`); strings.Contains(loc, token) {
		t.Errorf("the token stays in the URL: %s", loc)
	}
	e.waitFor("loaded", `!document.querySelector('#endpoints').innerText.includes('…')`)
	portal := e.text("main")
	for _, want := range []string{flaky.URL, url} {
		if !strings.Contains(portal, want) {
			t.Errorf("portal lacks the tenant's %q:\n%s", want, portal)
		}
	}
	for _, unwanted := range []string{globex.URL, globex.ID, "Globex", "globex"} {
		if strings.Contains(portal, unwanted) {
			t.Errorf("portal shows another tenant's %q:\n%s", unwanted, portal)
		}
	}
	e.shot("10-portal-endpoints")
	e.do("try another tenant's endpoint", chromedp.Navigate(e.srv.URL+"/portal/ui/#/webhooks/"+globex.ID))
	e.page("error")
	if msg := e.text("main"); !strings.Contains(msg, "There is no endpoint "+globex.ID+" among yours") || strings.Contains(msg, "Globex") {
		t.Errorf("another tenant's endpoint in the portal: %q", msg)
	}
	// Header values are write-only: the edit form names the header without its value, and saving
	// without typing one keeps it.
	e.do("edit the flaky endpoint", chromedp.Navigate(e.srv.URL+"/portal/ui/#/webhooks/"+flaky.ID+"/edit"))
	e.page("edit")
	e.shot("13-portal-edit")
	if v := e.eval(`document.querySelector('#f-headers').value`); v != "X-Api-Key: " {
		t.Errorf("the headers field: %q", v)
	}
	if page := e.eval(`document.documentElement.outerHTML`); strings.Contains(page, "k-123") {
		t.Error("a header value is in the page")
	}
	e.do("save a new description", clear("#f-description"),
		chromedp.SendKeys(chromedp.CSS("#f-description"), "Acme billing v2"), chromedp.Click(chromedp.CSS("#save")))
	e.waitFor("saved", `document.querySelector('#flash').innerText.includes('Endpoint saved')`)
	saved, err := d.Webhooks().Get(ctx, flaky.ID)
	if err != nil {
		t.Fatal(err)
	}
	if saved.Description != "Acme billing v2" || saved.Headers["X-Api-Key"] != "k-123" {
		t.Errorf("saved through the UI: description %q, headers %v", saved.Description, saved.Headers)
	}
	e.do("the tenant's delivery", chromedp.Navigate(e.srv.URL+"/portal/ui/#/deliveries/"+failedIDs[0]))
	e.page("delivery")
	e.shot("11-portal-delivery")

	e.noIssues()
}

// clear empties an input, as select-all and delete would.
func clear(sel string) chromedp.Action[chromedp.Void] {
	return chromedp.Evaluate[chromedp.Void](`document.querySelector(` + jsString(sel) + `).value = ''`)
}

// noHorizontalScroll checks that the page fits the viewport's width.
func (e *env) noHorizontalScroll(what string) {
	e.t.Helper()
	w, err := chromedp.Run(e.ctx, chromedp.Evaluate[[]int](`[document.documentElement.scrollWidth, window.innerWidth]`))
	if err != nil {
		e.t.Fatal(err)
	}
	if w[0] > w[1] {
		e.t.Errorf("%s is %d px wide in a %d px viewport", what, w[0], w[1])
	}
}

// waitFailed waits until a webhook has n failed deliveries and returns their ids, newest first.
func waitFailed(t *testing.T, d *webhooks.Dispatcher, webhookID string, n int) []string {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		page, err := d.Deliveries().Page(context.Background(), webhookID, webhooks.DeliveryQuery{Status: webhooks.StatusFailed})
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Deliveries) == n {
			ids := make([]string, n)
			for i, dl := range page.Deliveries {
				ids[i] = dl.ID
			}
			return ids
		}
		if time.Now().After(deadline) {
			t.Fatalf("webhook %s has %d failed deliveries, want %d", webhookID, len(page.Deliveries), n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitWebhook finds the webhook with a URL.
func waitWebhook(t *testing.T, d *webhooks.Dispatcher, url string) *webhooks.Webhook {
	t.Helper()
	list, err := d.Webhooks().List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range list {
		if w.URL == url {
			full, err := d.Webhooks().Get(context.Background(), w.ID)
			if err != nil || full.Secret == "" {
				t.Fatalf("get webhook %s: %v", w.ID, err)
			}
			return full
		}
	}
	t.Fatalf("no webhook with URL %s", url)
	return nil
}
