package api

// The web UI: static HTML, CSS and JS embedded in the library, served under /ui/ by the operator's API
// (every tenant) and by the portal (the tenant a portal token names). The page holds no data: it calls
// the same JSON API, so the API's validation, errors and tenant checks apply to everything it shows or
// changes. In the portal the page reads the token from its URL fragment (/ui/#token=…, which browsers
// never send to the server), keeps it in sessionStorage and sends it as "Authorization: Bearer"; the
// static files themselves need no token. Custom header values are never sent by the API: the page
// lists header names, and an edit that leaves a value empty keeps it.

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"net/http"
	"path"
	"strings"
)

//go:embed ui/index.html ui/app.js ui/format.js ui/deliveries.js ui/delivery.js ui/catalog.js ui/transform.js ui/app.css
var uiFiles embed.FS

// UIContentSecurityPolicy is the Content-Security-Policy sent with every answer of the web UI's
// routes: no inline script or style, nothing from another origin, no framing.
const UIContentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; frame-ancestors 'none'"

// uiFile is one embedded file, ready to serve.
type uiFile struct {
	body        []byte
	contentType string
	etag        string
}

// uiHandler serves the embedded UI files under /ui/.
type uiHandler struct{ files map[string]uiFile }

// newUIHandler builds the UI's handler for the operator's API or the portal: index.html names its mode
// (the page shows tenants only to the operator, and asks for a token only in the portal).
func newUIHandler(portal bool) http.Handler {
	mode := "operator"
	if portal {
		mode = "portal"
	}
	h := &uiHandler{files: map[string]uiFile{}}
	for name, ctype := range map[string]string{"index.html": "text/html; charset=utf-8",
		"app.js": "text/javascript; charset=utf-8", "format.js": "text/javascript; charset=utf-8",
		"deliveries.js": "text/javascript; charset=utf-8", "delivery.js": "text/javascript; charset=utf-8",
		"catalog.js": "text/javascript; charset=utf-8", "transform.js": "text/javascript; charset=utf-8",
		"app.css": "text/css; charset=utf-8"} {
		b, err := uiFiles.ReadFile("ui/" + name)
		if err != nil {
			panic("webhooks: embedded UI file missing: " + name) // the embed directive guarantees it
		}
		if name == "index.html" {
			b = bytes.ReplaceAll(b, []byte(`data-mode="operator"`), []byte(`data-mode="`+mode+`"`))
		}
		sum := sha256.Sum256(b)
		h.files[name] = uiFile{body: b, contentType: ctype, etag: `"` + hex.EncodeToString(sum[:8]) + `"`}
	}
	return h
}

// setUIHeaders sets the headers of every answer of the UI's routes.
func setUIHeaders(h http.Header) {
	h.Set("Content-Security-Policy", UIContentSecurityPolicy)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
}

func (h *uiHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	name := strings.TrimPrefix(path.Clean(r.URL.Path), "/ui")
	name = strings.TrimPrefix(name, "/")
	if name == "" {
		name = "index.html"
	}
	hdr := w.Header()
	setUIHeaders(hdr)
	f, ok := h.files[name]
	if !ok {
		writeError(w, http.StatusNotFound, "not_found", "no such file")
		return
	}
	hdr.Set("Content-Type", f.contentType)
	hdr.Set("Cache-Control", "no-cache")
	hdr.Set("ETag", f.etag)
	if r.Header.Get("If-None-Match") == f.etag {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	_, _ = w.Write(f.body) // HEAD: net/http discards the body
}

// redirectToUI answers /ui with a relative redirect to /ui/, which works under any mount prefix.
func redirectToUI(w http.ResponseWriter, _ *http.Request) {
	setUIHeaders(w.Header())
	w.Header().Set("Location", "ui/")
	w.WriteHeader(http.StatusMovedPermanently)
}
