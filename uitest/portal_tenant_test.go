package uitest

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestUIPortalShowsItsTenant: the portal shows the tenant it acts for; a #token= link for another
// tenant does not switch an open tab (it says so, in words, and keeps acting for the first); the
// operator's UI takes no token from a link at all.
func TestUIPortalShowsItsTenant(t *testing.T) {
	e := newEnv(t)
	acme, err := e.d.PortalToken("acme", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	globex, err := e.d.PortalToken("globex", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	portal := e.srv.URL + "/portal/ui/"
	e.do("the acme portal", chromedp.Navigate(portal+"#token="+acme))
	e.page("endpoints")
	if b := e.text("#mode"); b != "portal · acme" {
		t.Errorf("the portal's badge: %q", b)
	}
	e.do("a link for globex", chromedp.Navigate(portal+"#token="+globex))
	e.page("endpoints")
	if f := e.text("#flash"); !strings.Contains(f, `tenant "globex"`) || !strings.Contains(f, `acts for "acme"`) {
		t.Errorf("the refusal: %q", f)
	}
	if b := e.text("#mode"); b != "portal · acme" {
		t.Errorf("the badge after a link for another tenant: %q", b)
	}
	if got := e.eval(`sessionStorage.getItem('webhooks.portalToken')`); got != acme {
		t.Errorf("the tab's token changed to another tenant's")
	}
	e.shot("50-portal-other-tenant-refused")

	e.eval(`sessionStorage.clear(), ''`) // the portal and the operator's UI share this origin's storage
	e.do("the operator's UI with a token link", chromedp.Navigate(e.srv.URL+"/ui/#token="+acme))
	e.page("endpoints")
	if got := e.eval(`String(sessionStorage.getItem('webhooks.portalToken'))`); got != "null" {
		t.Errorf("the operator's UI kept a token from a link: %q", got)
	}
	if b := e.text("#mode"); b != "operator" {
		t.Errorf("the operator's badge: %q", b)
	}
}
