package webhooks

// The admin API's delivery routes (Handler lists every route).

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"
)

func (h *adminHandler) listDeliveries(w http.ResponseWriter, r *http.Request) {
	v := r.URL.Query()
	q := DeliveryQuery{Status: Status(v.Get("status")), Cursor: v.Get("cursor")}
	if s := v.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			h.fail(w, r, fmt.Errorf("%w: limit must be a positive integer", errBadRequest))
			return
		}
		q.Limit = n
	}
	if _, err := h.webhook(r, r.PathValue("id")); err != nil {
		h.fail(w, r, err)
		return
	}
	page, err := h.d.deliveries.Page(r.Context(), r.PathValue("id"), q)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	for _, dl := range page.Deliveries {
		dl.History = nil // GET /deliveries/{id} has it
	}
	h.write(w, r, http.StatusOK, page)
}

func (h *adminHandler) recoverWebhook(w http.ResponseWriter, r *http.Request) {
	v := r.URL.Query()
	if v.Get("since") == "" {
		h.fail(w, r, fmt.Errorf("%w: since is required (RFC 3339)", errBadRequest))
		return
	}
	since, err := time.Parse(time.RFC3339, v.Get("since"))
	if err != nil {
		h.fail(w, r, fmt.Errorf("%w: since must be an RFC 3339 time", errBadRequest))
		return
	}
	until := h.d.now()
	if s := v.Get("until"); s != "" {
		if until, err = time.Parse(time.RFC3339, s); err != nil {
			h.fail(w, r, fmt.Errorf("%w: until must be an RFC 3339 time", errBadRequest))
			return
		}
	}
	limit := 0
	if s := v.Get("limit"); s != "" {
		if limit, err = strconv.Atoi(s); err != nil || limit < 1 {
			h.fail(w, r, fmt.Errorf("%w: limit must be a positive integer", errBadRequest))
			return
		}
	}
	if _, err := h.webhook(r, r.PathValue("id")); err != nil {
		h.fail(w, r, err)
		return
	}
	n, err := h.d.Recover(r.Context(), r.PathValue("id"), since, until, limit)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.write(w, r, http.StatusOK, struct {
		Redelivered int `json:"redelivered"`
	}{n})
}

func (h *adminHandler) getDelivery(w http.ResponseWriter, r *http.Request) {
	dl, err := h.delivery(r, r.PathValue("id"))
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.write(w, r, http.StatusOK, h.detail(r, dl))
}

// deliveryDetail is an ordered delivery as the detail route shows it: with its place in its key's
// sequence (DeliveryRepo.Position: 0 for the head, -1 for none).
type deliveryDetail struct {
	*Delivery
	OrderPosition int `json:"order_position"`
}

// detail is what the detail route shows of dl: an ordered one with its position, when it can be read.
func (h *adminHandler) detail(r *http.Request, dl *Delivery) any {
	if dl.OrderKey == "" {
		return dl
	}
	pos, err := h.d.deliveries.Position(r.Context(), dl.ID)
	if err != nil {
		return dl
	}
	return deliveryDetail{Delivery: dl, OrderPosition: pos}
}

func (h *adminHandler) redeliver(w http.ResponseWriter, r *http.Request) {
	if _, err := h.delivery(r, r.PathValue("id")); err != nil {
		h.fail(w, r, err)
		return
	}
	dl, err := h.d.Redeliver(r.Context(), r.PathValue("id"))
	if errors.Is(err, ErrDeferred) && dl != nil {
		h.write(w, r, http.StatusAccepted, dl) // reset and scheduled; a worker makes the attempt
		return
	}
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.write(w, r, http.StatusOK, dl)
}

// delivery reads a delivery the request may see: in the portal, only one of its tenant's webhooks.
func (h *adminHandler) delivery(r *http.Request, id string) (*Delivery, error) {
	dl, err := h.d.deliveries.Get(r.Context(), id)
	if err != nil || !h.portal {
		return dl, err
	}
	if _, err := h.webhook(r, dl.WebhookID); err != nil {
		return nil, fmt.Errorf("%w: delivery %q", ErrNotFound, id)
	}
	return dl, nil
}
