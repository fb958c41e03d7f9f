package api

// The webhook routes (the root's Handler lists every route).

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/smartdrop/webhooks/internal/types"
)

func (rt *router) createWebhook(w http.ResponseWriter, r *http.Request) {
	body, err := readBody(r, false)
	if err != nil {
		rt.fail(w, r, err)
		return
	}
	wh, err := webhookFromCreate(body)
	if s := scopeOf(r); err == nil && s.Restricted {
		if wh.Tenant != "" {
			err = fmt.Errorf("%w: tenant is set by the portal token", ErrBadRequest)
		}
		wh.Tenant = s.Tenant
	}
	if err != nil {
		rt.fail(w, r, err)
		return
	}
	out, err := rt.b.CreateWebhook(r.Context(), wh)
	rt.answerWebhook(w, r, http.StatusCreated, out, true, err)
}

// answerWebhook writes a webhook as the API sends it (WebhookView), or the error.
func (rt *router) answerWebhook(w http.ResponseWriter, r *http.Request, status int, wh *types.Webhook, withSecret bool, err error) {
	if err != nil {
		rt.fail(w, r, err)
		return
	}
	rt.answer(w, r, status, WebhookView(wh, withSecret), nil)
}

// listWebhooks lists the scope's webhooks; the operator may restrict it to one tenant (?tenant=T, ""
// for the webhooks of none).
func (rt *router) listWebhooks(w http.ResponseWriter, r *http.Request) {
	s := scopeOf(r)
	if t, ok := r.URL.Query()["tenant"]; ok && !s.Restricted {
		s = Scope{Tenant: t[0], Restricted: true}
	}
	list, err := rt.b.ListWebhooks(r.Context(), s)
	if err != nil {
		rt.fail(w, r, err)
		return
	}
	for i, wh := range list {
		list[i] = WebhookView(wh, false)
	}
	rt.answer(w, r, http.StatusOK, struct {
		Webhooks []*types.Webhook `json:"webhooks"`
	}{list}, nil)
}

func (rt *router) getWebhook(w http.ResponseWriter, r *http.Request) {
	out, err := rt.b.GetWebhook(r.Context(), scopeOf(r), r.PathValue("id"))
	rt.answerWebhook(w, r, http.StatusOK, out, false, err)
}

// secret answers a webhook's signing secret (and, for an ed25519 webhook, the key receivers verify
// with).
func (rt *router) secret(w http.ResponseWriter, r *http.Request) {
	wh, err := rt.b.GetWebhook(r.Context(), scopeOf(r), r.PathValue("id"))
	if err != nil {
		rt.fail(w, r, err)
		return
	}
	rt.answer(w, r, http.StatusOK, struct {
		Secret    string `json:"secret"`
		PublicKey string `json:"public_key,omitempty"`
	}{wh.Secret, wh.PublicKey}, nil)
}

// stats answers a webhook's attempts per hour by outcome.
func (rt *router) stats(w http.ResponseWriter, r *http.Request) {
	hours, err := rt.b.Stats(r.Context(), scopeOf(r), r.PathValue("id"))
	rt.answer(w, r, http.StatusOK, struct {
		Hours []types.HourStats `json:"hours"`
	}{hours}, err)
}

func (rt *router) patchWebhook(w http.ResponseWriter, r *http.Request) {
	body, err := readBody(r, false)
	if err != nil {
		rt.fail(w, r, err)
		return
	}
	out, err := rt.b.PatchWebhook(r.Context(), scopeOf(r), r.PathValue("id"), webhookPatch(body))
	rt.answerWebhook(w, r, http.StatusOK, out, false, err)
}

func (rt *router) deleteWebhook(w http.ResponseWriter, r *http.Request) {
	if err := rt.b.DeleteWebhook(r.Context(), scopeOf(r), r.PathValue("id")); err != nil {
		rt.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (rt *router) testWebhook(w http.ResponseWriter, r *http.Request) {
	dl, err := rt.b.SendTest(r.Context(), scopeOf(r), r.PathValue("id"))
	rt.answerDeferred(w, r, http.StatusCreated, dl, err)
}

// answerDeferred writes a delivery with status, or with 202 when its attempt was left to a worker
// (an error wrapping types.ErrDeferred, with the delivery), or the error.
func (rt *router) answerDeferred(w http.ResponseWriter, r *http.Request, status int, dl *types.Delivery, err error) {
	if errors.Is(err, types.ErrDeferred) && dl != nil {
		status, err = http.StatusAccepted, nil // created or reset, and scheduled; a worker makes the attempt
	}
	rt.answer(w, r, status, dl, err)
}

// rotateBody is the optional body of POST /webhooks/{id}/rotate-secret.
type rotateBody struct {
	GraceSeconds *int64 `json:"grace_seconds"`
}

func (rt *router) rotateSecret(w http.ResponseWriter, r *http.Request) {
	grace, err := rotationGrace(r)
	if err != nil {
		rt.fail(w, r, err)
		return
	}
	out, err := rt.b.RotateSecret(r.Context(), scopeOf(r), r.PathValue("id"), grace)
	rt.answerWebhook(w, r, http.StatusOK, out, true, err)
}

// rotationGrace reads a rotate-secret request's grace period: DefaultRotationGrace unless the body
// says, at most MaxRotationGrace.
func rotationGrace(r *http.Request) (time.Duration, error) {
	b, err := readBody(r, true)
	if err != nil || len(b) == 0 {
		return DefaultRotationGrace, err
	}
	var body rotateBody
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&body); err != nil || dec.More() {
		return 0, fmt.Errorf("%w: the body must be one JSON object {\"grace_seconds\": N}", ErrBadRequest)
	}
	if body.GraceSeconds == nil {
		return DefaultRotationGrace, nil
	}
	if s := *body.GraceSeconds; s < 0 || s > int64(MaxRotationGrace/time.Second) {
		return 0, fmt.Errorf("%w: grace_seconds must be in [0, %d]", ErrBadRequest, int64(MaxRotationGrace/time.Second))
	}
	return time.Duration(*body.GraceSeconds) * time.Second, nil
}

// replayBody is the body of POST /webhooks/{id}/replay.
type replayBody struct {
	Since  *time.Time `json:"since"`
	Cursor string     `json:"cursor"`
}

// replayWebhook sends a webhook one page of the events it missed: {"since": T, "cursor": C} ->
// {"scheduled": n, "next_cursor": C}, no next_cursor once the replay is complete.
func (rt *router) replayWebhook(w http.ResponseWriter, r *http.Request) {
	b, err := readBody(r, false)
	var body replayBody
	if err == nil {
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		if dec.Decode(&body) != nil || dec.More() || body.Since == nil {
			err = fmt.Errorf("%w: the body must be one JSON object {\"since\": RFC 3339 time, \"cursor\": optional}", ErrBadRequest)
		}
	}
	if err != nil {
		rt.fail(w, r, err)
		return
	}
	n, next, err := rt.b.Replay(r.Context(), scopeOf(r), r.PathValue("id"), *body.Since, body.Cursor)
	rt.answer(w, r, http.StatusOK, struct {
		Scheduled  int    `json:"scheduled"`
		NextCursor string `json:"next_cursor,omitempty"`
	}{n, next}, err)
}
