package admin

// The request a delivery sends, as the admin API's GET /deliveries/{id}/request shows it. The library
// stores no request per attempt (that would cost every delivery memory); the request is rebuilt from
// the delivery and the endpoint's settings now, and says of each header how far it is exact:
//
//   - "fixed": the same value on every attempt, exactly what was sent (webhook-id, Content-Type,
//     User-Agent);
//   - "attempt": a value of its own on each attempt, given for the latest one, exactly what it sent
//     (webhook-timestamp);
//   - "signed": computed on each attempt and not stored (webhook-signature; traceparent);
//   - "endpoint": the endpoint's own headers and credentials as configured now, which may have changed
//     since an attempt; their values are write-only in this API and never given.
//
// Secrets, custom header values and credentials are never in the answer.

import (
	"context"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/smartdrop/webhooks/internal/api"
	"github.com/smartdrop/webhooks/internal/types"
)

// rebuildRequest is the request of a delivery to a webhook (as stored now).
func (b *Backend) rebuildRequest(dl *types.Delivery, wh *types.Webhook) *api.DeliveryRequest {
	hs := []api.RequestHeader{
		{Name: "webhook-id", Value: dl.ID, Source: api.HeaderFixed},
		{Name: "webhook-timestamp", Source: api.HeaderAttempt},
		{Name: "webhook-signature", Source: api.HeaderSigned},
		{Name: "Content-Type", Value: "application/json", Source: api.HeaderFixed},
		{Name: "User-Agent", Value: b.UserAgent, Source: api.HeaderFixed},
	}
	if n := len(dl.History); n > 0 {
		hs[1].Value = strconv.FormatInt(dl.History[n-1].At.Unix(), 10)
	}
	if b.Traced {
		hs = append(hs, api.RequestHeader{Name: "traceparent", Source: api.HeaderSigned})
	}
	if a := wh.Auth; a != nil && (a.Basic != nil || a.Bearer != "" || a.OAuth2 != nil) {
		hs = append(hs, api.RequestHeader{Name: "Authorization", Source: api.HeaderEndpoint})
	}
	names := make([]string, 0, len(wh.Headers))
	for name := range wh.Headers {
		names = append(names, name) // sent as spelled (endpoint.SetHeaders)
	}
	slices.Sort(names)
	for _, name := range names {
		hs = append(hs, api.RequestHeader{Name: name, Source: api.HeaderEndpoint})
	}
	req := &api.DeliveryRequest{URL: api.URLView(wh.URL), Headers: hs}
	if strings.HasPrefix(wh.URL, "http://") || strings.HasPrefix(wh.URL, "https://") {
		req.Method = http.MethodPost
	} else { // a broker's message: headers, no method, no User-Agent
		req.Headers = slices.DeleteFunc(req.Headers, func(h api.RequestHeader) bool { return h.Name == "User-Agent" })
	}
	return req
}

// Request is a delivery's request as rebuilt (rebuildRequest), within a scope.
func (b *Backend) Request(ctx context.Context, s api.Scope, id string) (*api.DeliveryRequest, error) {
	dl, err := b.delivery(ctx, s, id)
	if err != nil {
		return nil, err
	}
	wh, err := b.WebhookRepo.Stored(ctx, dl.WebhookID) // its secrets are not needed, sealed or not
	if err != nil {
		return nil, err
	}
	return b.rebuildRequest(dl, &wh.Webhook), nil
}
