package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/smartdrop/webhooks"

	"github.com/smartdrop/webhooks/webhooksd/internal/ingest"
)

// DefaultPortalTokenTTL is a portal token's life when a request does not say.
const DefaultPortalTokenTTL = time.Hour

// portalTokenRequest is the body of POST /v1/portal-tokens.
type portalTokenRequest struct {
	Tenant     string `json:"tenant"`
	TTLSeconds int64  `json:"ttl_seconds"`
}

// portalTokenJSON is its answer.
type portalTokenJSON struct {
	Token     string    `json:"token"`
	Tenant    string    `json:"tenant"`
	ExpiresAt time.Time `json:"expires_at"`
	// Path opens the tenant's portal UI with the token (in the URL's fragment, which browsers never
	// send to a server), relative to the server's address.
	Path string `json:"path"`
}

// portalToken serves POST /v1/portal-tokens (operator only): a token that opens the portal
// (/portal/) for one tenant, for ttl_seconds (default an hour, at most webhooks.MaxPortalTokenTTL).
func (s *Server) portalToken(w http.ResponseWriter, r *http.Request) {
	var req portalTokenRequest
	dec := json.NewDecoder(io.LimitReader(r.Body, 4<<10))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		ingest.WriteError(w, http.StatusBadRequest, "invalid_request", "the body must be {\"tenant\": \"acme\", \"ttl_seconds\": 3600}", "")
		return
	}
	if len(s.cfg.Options.PortalKey) == 0 {
		ingest.WriteError(w, http.StatusConflict, "portal_off", "this server has no portal key: start it with -portal-key "+
			"(WEBHOOKS_PORTAL_KEY, at least 32 characters) to make portal tokens", "")
		return
	}
	ttl := DefaultPortalTokenTTL
	if req.TTLSeconds != 0 {
		ttl = time.Duration(req.TTLSeconds) * time.Second
	}
	if req.TTLSeconds < 0 || ttl > webhooks.MaxPortalTokenTTL {
		ingest.WriteError(w, http.StatusBadRequest, "invalid_request", "ttl_seconds must be from 1 to "+
			jsonNumber(int64(webhooks.MaxPortalTokenTTL/time.Second))+" (0 or absent: an hour)", "ttl_seconds")
		return
	}
	token, err := s.d.PortalToken(req.Tenant, ttl)
	if err != nil {
		msg := err.Error()
		if errors.Is(err, webhooks.ErrInvalidWebhook) {
			msg = "tenant must be 1-64 characters of [A-Za-z0-9_.-]: the tenant whose portal the token opens"
		}
		ingest.WriteError(w, http.StatusBadRequest, "invalid_request", msg, "tenant")
		return
	}
	out := portalTokenJSON{Token: token, Tenant: req.Tenant, ExpiresAt: time.Now().Add(ttl).UTC().Truncate(time.Second),
		Path: "/portal/ui/#token=" + url.QueryEscape(token)}
	var b bytes.Buffer
	_ = json.NewEncoder(&b).Encode(out)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusCreated)
	_, _ = w.Write(b.Bytes())
}

func jsonNumber(n int64) string { b, _ := json.Marshal(n); return string(b) }
