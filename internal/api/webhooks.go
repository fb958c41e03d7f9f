package api

// The webhook routes (the root's Handler lists every route).

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

func (rt *router) createWebhook(w http.ResponseWriter, r *http.Request) {
	body, err := readBody(r, false)
	if err != nil {
		rt.fail(w, r, err)
		return
	}
	out, err := rt.b.CreateWebhook(r.Context(), scopeOf(r), body)
	rt.answer(w, r, http.StatusCreated, out, err)
}

// listWebhooks lists the scope's webhooks; the operator may restrict it to one tenant (?tenant=T, ""
// for the webhooks of none).
func (rt *router) listWebhooks(w http.ResponseWriter, r *http.Request) {
	s := scopeOf(r)
	if t, ok := r.URL.Query()["tenant"]; ok && !s.Restricted {
		s = Scope{Tenant: t[0], Restricted: true}
	}
	out, err := rt.b.ListWebhooks(r.Context(), s)
	rt.answer(w, r, http.StatusOK, out, err)
}

func (rt *router) getWebhook(w http.ResponseWriter, r *http.Request) {
	out, err := rt.b.GetWebhook(r.Context(), scopeOf(r), r.PathValue("id"))
	rt.answer(w, r, http.StatusOK, out, err)
}

func (rt *router) patchWebhook(w http.ResponseWriter, r *http.Request) {
	body, err := readBody(r, false)
	if err != nil {
		rt.fail(w, r, err)
		return
	}
	out, err := rt.b.PatchWebhook(r.Context(), scopeOf(r), r.PathValue("id"), body)
	rt.answer(w, r, http.StatusOK, out, err)
}

func (rt *router) deleteWebhook(w http.ResponseWriter, r *http.Request) {
	if err := rt.b.DeleteWebhook(r.Context(), scopeOf(r), r.PathValue("id")); err != nil {
		rt.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (rt *router) testWebhook(w http.ResponseWriter, r *http.Request) {
	out, deferred, err := rt.b.SendTest(r.Context(), scopeOf(r), r.PathValue("id"))
	rt.answer(w, r, deferredStatus(deferred, http.StatusCreated), out, err)
}

// deferredStatus is 202 when an attempt was left to the worker, else status.
func deferredStatus(deferred bool, status int) int {
	if deferred {
		return http.StatusAccepted
	}
	return status
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
	rt.answer(w, r, http.StatusOK, out, err)
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
		return 0, fmt.Errorf("%w: the body must be one JSON object {\"grace_seconds\": N}", errBadRequest)
	}
	if body.GraceSeconds == nil {
		return DefaultRotationGrace, nil
	}
	if s := *body.GraceSeconds; s < 0 || s > int64(MaxRotationGrace/time.Second) {
		return 0, fmt.Errorf("%w: grace_seconds must be in [0, %d]", errBadRequest, int64(MaxRotationGrace/time.Second))
	}
	return time.Duration(*body.GraceSeconds) * time.Second, nil
}

// webhookRead serves a read of one webhook's data (its secret, health or stats), or an action on it
// that takes no body (probe now).
func webhookRead(read func(Backend, context.Context, Scope, string) ([]byte, error)) func(*router) http.HandlerFunc {
	return func(rt *router) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			out, err := read(rt.b, r.Context(), scopeOf(r), r.PathValue("id"))
			rt.answer(w, r, http.StatusOK, out, err)
		}
	}
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
			err = fmt.Errorf("%w: the body must be one JSON object {\"since\": RFC 3339 time, \"cursor\": optional}", errBadRequest)
		}
	}
	if err != nil {
		rt.fail(w, r, err)
		return
	}
	n, next, err := rt.b.Replay(r.Context(), scopeOf(r), r.PathValue("id"), *body.Since, body.Cursor)
	out, _ := json.Marshal(struct {
		Scheduled  int    `json:"scheduled"`
		NextCursor string `json:"next_cursor,omitempty"`
	}{n, next}) // always encodes
	rt.answer(w, r, http.StatusOK, out, err)
}
