package api

// The delivery routes (the root's Handler lists every route).

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"
)

func (rt *router) listDeliveries(w http.ResponseWriter, r *http.Request) {
	v := r.URL.Query()
	q := DeliveryQuery{Status: v.Get("status"), Cursor: v.Get("cursor")}
	var err error
	if q.Limit, err = positiveInt(v.Get("limit")); err != nil {
		rt.fail(w, r, err)
		return
	}
	out, err := rt.b.Deliveries(r.Context(), scopeOf(r), r.PathValue("id"), q)
	rt.answer(w, r, http.StatusOK, out, err)
}

// positiveInt reads an optional positive integer parameter (0 when absent).
func positiveInt(s string) (int, error) {
	if s == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("%w: limit must be a positive integer", errBadRequest)
	}
	return n, nil
}

func (rt *router) recoverWebhook(w http.ResponseWriter, r *http.Request) {
	v := r.URL.Query()
	if v.Get("since") == "" {
		rt.fail(w, r, fmt.Errorf("%w: since is required (RFC 3339)", errBadRequest))
		return
	}
	since, err := time.Parse(time.RFC3339, v.Get("since"))
	if err != nil {
		rt.fail(w, r, fmt.Errorf("%w: since must be an RFC 3339 time", errBadRequest))
		return
	}
	var until time.Time
	if s := v.Get("until"); s != "" {
		if until, err = time.Parse(time.RFC3339, s); err != nil {
			rt.fail(w, r, fmt.Errorf("%w: until must be an RFC 3339 time", errBadRequest))
			return
		}
	}
	limit, err := positiveInt(v.Get("limit"))
	if err != nil {
		rt.fail(w, r, err)
		return
	}
	n, err := rt.b.Recover(r.Context(), scopeOf(r), r.PathValue("id"), since, until, limit)
	if err != nil {
		rt.fail(w, r, err)
		return
	}
	out, _ := json.Marshal(struct {
		Redelivered int `json:"redelivered"`
	}{n}) // an int always encodes
	writeJSON(w, http.StatusOK, out)
}

func (rt *router) getDelivery(w http.ResponseWriter, r *http.Request) {
	out, err := rt.b.Delivery(r.Context(), scopeOf(r), r.PathValue("id"))
	rt.answer(w, r, http.StatusOK, out, err)
}

func (rt *router) redeliver(w http.ResponseWriter, r *http.Request) {
	out, deferred, err := rt.b.Redeliver(r.Context(), scopeOf(r), r.PathValue("id"))
	rt.answer(w, r, deferredStatus(deferred, http.StatusOK), out, err)
}

// searchDeliveries finds deliveries across the scope's webhooks: ?id= a delivery or event id, and
// exact ?status= and ?event_type= filters.
func (rt *router) searchDeliveries(w http.ResponseWriter, r *http.Request) {
	v := r.URL.Query()
	q := DeliverySearch{ID: v.Get("id"), Status: v.Get("status"), EventType: v.Get("event_type")}
	var err error
	if q.Limit, err = positiveInt(v.Get("limit")); err != nil {
		rt.fail(w, r, err)
		return
	}
	out, err := rt.b.SearchDeliveries(r.Context(), scopeOf(r), q)
	rt.answer(w, r, http.StatusOK, out, err)
}

func (rt *router) backlog(w http.ResponseWriter, r *http.Request) {
	out, err := rt.b.Backlog(r.Context())
	rt.answer(w, r, http.StatusOK, out, err)
}

// deliveryAction serves a read or an action on one delivery (its payload, retry now).
func deliveryAction(act func(Backend, context.Context, Scope, string) ([]byte, error)) func(*router) http.HandlerFunc {
	return webhookRead(act) // the same shape: the id in the path, the answer JSON
}
