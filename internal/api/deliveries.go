package api

// The delivery routes (the root's Handler lists every route).

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"

	"github.com/smartdrop/webhooks/internal/types"
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
		return 0, fmt.Errorf("%w: limit must be a positive integer", ErrBadRequest)
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
		return time.Time{}, fmt.Errorf("%w: %s must be an RFC 3339 time", ErrBadRequest, name)
	}
	return t, nil
}

func (rt *router) recoverWebhook(w http.ResponseWriter, r *http.Request) {
	v := r.URL.Query()
	if v.Get("since") == "" {
		rt.fail(w, r, fmt.Errorf("%w: since is required (RFC 3339)", ErrBadRequest))
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
	rt.answer(w, r, http.StatusOK, struct {
		Redelivered int `json:"redelivered"`
	}{n}, nil)
}

func (rt *router) getDelivery(w http.ResponseWriter, r *http.Request) {
	out, err := rt.b.Delivery(r.Context(), scopeOf(r), r.PathValue("id"))
	rt.answer(w, r, http.StatusOK, out, err)
}

func (rt *router) redeliver(w http.ResponseWriter, r *http.Request) {
	dl, err := rt.b.Redeliver(r.Context(), scopeOf(r), r.PathValue("id"))
	rt.answerDeferred(w, r, http.StatusOK, dl, err)
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
		err = fmt.Errorf("%w: to is before from", ErrBadRequest)
	}
	if err == nil && !slices.Contains([]types.Status{"", types.StatusPending, types.StatusSuccess, types.StatusFailed, types.StatusSkipped}, types.Status(q.Status)) {
		err = fmt.Errorf("%w: status must be pending, success, failed or skipped", ErrBadRequest)
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

// expungeTenant runs one step of a tenant's erasure: {"removed": n}, 0 once nothing is left.
func (rt *router) expungeTenant(w http.ResponseWriter, r *http.Request) {
	n, err := rt.b.ExpungeTenant(r.Context(), r.PathValue("tenant"))
	rt.answer(w, r, http.StatusOK, struct {
		Removed int `json:"removed"`
	}{n}, err)
}

// payload answers the body a delivery sends, {"payload": …, "transformed"}, null once expired (with
// when, and "payload expired on …"); transformed when it is the event as its webhook's transformation
// reshapes it.
func (rt *router) payload(w http.ResponseWriter, r *http.Request) {
	v, err := rt.b.Payload(r.Context(), scopeOf(r), r.PathValue("id"))
	if err == nil && !json.Valid(v.Payload) {
		v.Payload, v.Transformed = nil, false // expired (or not JSON): null
	}
	rt.answer(w, r, http.StatusOK, v, err)
}
