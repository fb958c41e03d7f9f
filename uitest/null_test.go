package uitest

import (
	"context"
	"strings"
	"testing"

	"github.com/smartdrop/webhooks"
)

// TestUINoNullOnPages: the endpoint page and the deliveries search, in the operator's view and the
// portal, end with what they say: no part the page leaves out is written as text ("null"), and every
// page shot in these tests is checked the same way (env.clean).
func TestUINoNullOnPages(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	w, err := e.d.Webhooks().Create(ctx, webhooks.Webhook{URL: e.rcURL + "/ok", Events: []string{"invoice.*"}, Tenant: "acme"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.d.Dispatch(ctx, webhooks.Event{Tenant: "acme", Type: "invoice.paid", ID: "inv_0"}); err != nil {
		t.Fatal(err)
	}
	// looseText is the text main holds outside any element: a value written where a part was left out.
	const looseText = `[...document.querySelector('main').childNodes].filter((n) => n.nodeType === Node.TEXT_NODE).map((n) => n.textContent).join('|')`
	check := func(name string) {
		t.Helper()
		if s := e.eval(looseText); strings.TrimSpace(s) != "" {
			t.Errorf("%s: text outside any part of the page: %q", name, s)
		}
		if last := e.eval(`document.querySelector('main').lastChild.textContent.trim()`); last == "null" {
			t.Errorf("%s ends with %q", name, last)
		}
		e.shot("76-no-null-" + name)
	}
	e.open("#/webhooks/"+w.ID, "endpoint")
	check("operator-endpoint")
	e.open("#/deliveries", "search")
	check("operator-search")
	e.openPortal("acme", "#/webhooks/"+w.ID, "endpoint")
	check("portal-endpoint")
	e.openPortal("acme", "#/deliveries", "search")
	check("portal-search")
	e.noIssues()
}
