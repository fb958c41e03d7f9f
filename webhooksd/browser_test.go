package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// browser is headless Chromium (Debian's chromium on PATH) driven by chromedp; without it the test
// skips, and fails under CI.
type browser struct {
	t   *testing.T
	ctx context.Context
}

func newBrowser(t *testing.T) *browser {
	var path string
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			path = p
			break
		}
	}
	if path == "" {
		skipOutsideCI(t, "chromium is not installed (apt-get install chromium): the browser test needs it")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.Flag("headless", true),
		chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun, chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.WindowSize(1280, 900))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	bctx, cancelBrowser := chromedp.NewContext(actx)
	ctx, cancel := context.WithTimeout(bctx, 3*time.Minute)
	t.Cleanup(func() { cancel(); cancelBrowser(); cancelAlloc() })
	require.NoError(t, chromedp.Do(ctx, chromedp.EmulateViewport(1280, 900)), "start chromium")
	return &browser{t: t, ctx: ctx}
}

func (b *browser) do(what string, actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	require.NoError(b.t, chromedp.Do(b.ctx, actions...), what)
}

func (b *browser) eval(expr string) string {
	b.t.Helper()
	s, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](expr))
	require.NoError(b.t, err, expr)
	return s
}

// page waits until the UI has rendered the named page (main[data-page]).
func (b *browser) page(name string) {
	b.t.Helper()
	_, err := chromedp.Run(b.ctx, chromedp.Poll[bool](`document.querySelector('main') && document.querySelector('main').dataset.page === `+
		fmt.Sprintf("%q", name), chromedp.WithPollingTimeout(30*time.Second)))
	require.NoError(b.t, err, "page %s (at %s: %s)", name, b.eval(`location.href`), b.eval(`document.body.innerText`))
}

func (b *browser) text() string { return b.eval(`document.querySelector('main').innerText`) }

// shot saves a screenshot under WEBHOOKS_UI_ARTIFACTS, when set.
func (b *browser) shot(name string) {
	dir := os.Getenv("WEBHOOKS_UI_ARTIFACTS")
	if dir == "" {
		return
	}
	buf, err := chromedp.Run(b.ctx, chromedp.FullScreenshot(100))
	if err == nil {
		_ = os.WriteFile(filepath.Join(dir, "webhooksd-"+name+".png"), buf, 0o644)
	}
}

// TestUIAndPortalInBrowser: the binary's operator UI, opened in headless Chromium, asks for the
// operator key (the API refused the page's first call), refuses a wrong key, and with the right one
// lists the webhooks created through the API; reloaded in the same tab it does not ask again. The
// portal asks for a token without one, and opens with a token made by POST /v1/portal-tokens,
// showing only its tenant's webhook. The APIs behind both refuse requests without a key or token.
func TestUIAndPortalInBrowser(t *testing.T) {
	t.Parallel()
	b := newBrowser(t)
	srv := startServer(t, serverArgs(realRedis(t), "ui-"+randomHex(4)))
	a := newAPI(t, func() string { return "http://" + srv.addr }, testKey)
	acme, _ := a.createWebhook("http://127.0.0.1:9/acme-orders", []string{"order.*"}, "acme")
	globex, _ := a.createWebhook("http://127.0.0.1:9/globex-invoices", []string{"invoice.*"}, "globex")

	anon := newAPI(t, a.base, "")
	for _, path := range []string{"/webhooks", "/portal/webhooks", "/backlog"} {
		status, _, _, err := anon.do("GET", path, nil)
		require.NoError(t, err)
		assert.Equal(t, 401, status, "%s without a key", path)
	}

	b.do("open the UI", chromedp.Navigate(srv.url("/ui/")))
	b.page("token")
	assert.Contains(t, b.text(), "Operator key required")
	assert.NotContains(t, b.text(), acme, "nothing listed without the key")
	b.shot("01-operator-key")
	b.do("a wrong key", chromedp.SendKeys(chromedp.CSS("#token"), "not-the-operator-key-00"), chromedp.Click(chromedp.CSS("main form button[type=submit]")))
	_, err := chromedp.Run(b.ctx, chromedp.Poll[bool](`document.body.innerText.includes('refused the key')`,
		chromedp.WithPollingTimeout(30*time.Second)))
	require.NoError(t, err, "a wrong key is refused: %s", b.text())
	b.page("token")
	b.do("the key", chromedp.SendKeys(chromedp.CSS("#token"), testKey), chromedp.Click(chromedp.CSS("main form button[type=submit]")))
	b.page("endpoints")
	_, err = chromedp.Run(b.ctx, chromedp.Poll[bool](`document.querySelector('main').innerText.includes('globex-invoices')`,
		chromedp.WithPollingTimeout(30*time.Second)))
	require.NoError(t, err, "the webhooks listed: %s", b.text())
	list := b.text()
	assert.Contains(t, list, "acme-orders")
	assert.Contains(t, list, "globex-invoices")
	b.shot("02-operator-endpoints")
	b.do("open a webhook", chromedp.Navigate(srv.url("/ui/#/webhooks/"+globex)))
	b.page("endpoint")
	b.do("reload the tab", chromedp.Reload())
	b.page("endpoint") // the key is kept for the tab: not asked again
	assert.Equal(t, testKey, b.eval(`sessionStorage.getItem('webhooks.operatorKey')`))

	var tok struct{ Token, Path string }
	require.NoError(t, json.Unmarshal(a.must(201, "POST", "/v1/portal-tokens", map[string]any{"tenant": "acme"}), &tok))
	b.do("open the portal without a token", chromedp.Navigate(srv.url("/portal/ui/")))
	b.page("token")
	assert.Contains(t, b.text(), "Portal token required")
	b.do("open the portal with its token", chromedp.Navigate(srv.url(tok.Path)))
	b.page("endpoints")
	_, err = chromedp.Run(b.ctx, chromedp.Poll[bool](`document.querySelector('main').innerText.includes('acme-orders')`,
		chromedp.WithPollingTimeout(30*time.Second)))
	require.NoError(t, err, "the tenant's webhook listed: %s", b.text())
	assert.NotContains(t, b.text(), "globex", "the portal shows only its tenant's webhooks")
	assert.False(t, strings.Contains(b.eval(`location.href`), tok.Token), "the token is taken out of the address bar")
	b.shot("03-portal-endpoints")
}
