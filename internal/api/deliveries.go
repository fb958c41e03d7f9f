package api

// The delivery routes (the root's Handler lists every route).

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
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

// optionalTime reads an optional RFC 3339 time parameter (zero when absent).
func optionalTime(v url.Values, name string) (time.Time, error) {
	if v.Get(name) == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339, v.Get(name))
	if err != nil {
		return time.Time{}, fmt.Errorf("%w: %s must be an RFC 3339 time", errBadRequest, name)
	}
	return t, nil
}

func (rt *router) recoverWebhook(w http.ResponseWriter, r *http.Request) {
	v := r.URL.Query()
	if v.Get("since") == "" {
		rt.fail(w, r, fmt.Errorf("%w: since is required (RFC 3339)", errBadRequest))
		return
	}
	since, err := optionalTime(v, "since")
	if err != nil {
		rt.fail(w, r, err)
		return
	}
	until, err := optionalTime(v, "until")
	if err != nil {
		rt.fail(w, r, err)
		return
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

// searchDeliveries finds deliveries across the scope's webhooks: ?id= a delivery or event id, exact
// ?status= and ?event_type= filters, ?from= and ?to= (RFC 3339) bounding when they were created, and
// ?cursor= continuing a search without an id.
func (rt *router) searchDeliveries(w http.ResponseWriter, r *http.Request) {
	v := r.URL.Query()
	q := DeliverySearch{ID: v.Get("id"), Status: v.Get("status"), EventType: v.Get("event_type"), Cursor: v.Get("cursor")}
	var err error
	if q.Limit, err = positiveInt(v.Get("limit")); err == nil {
		q.From, err = optionalTime(v, "from")
	}
	if err == nil {
		q.To, err = optionalTime(v, "to")
	}
	if err == nil && !q.From.IsZero() && !q.To.IsZero() && q.To.Before(q.From) {
		err = fmt.Errorf("%w: to is before from", errBadRequest)
	}
	if err != nil {
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
