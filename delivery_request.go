package webhooks

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

	"github.com/smartdrop/webhooks/internal/api"
)

// Where a request header's value comes from (requestHeader.Source).
const (
	headerFixed    = "fixed"
	headerAttempt  = "attempt"
	headerSigned   = "signed"
	headerEndpoint = "endpoint"
)

// requestHeader is one header of a delivery's request. Value is set only for fixed and attempt
// headers.
type requestHeader struct {
	Name   string `json:"name"`
	Value  string `json:"value,omitempty"`
	Source string `json:"source"`
}

// deliveryRequest is a delivery's request as rebuilt (above). URL is the endpoint's URL now.
type deliveryRequest struct {
	Method  string          `json:"method"`
	URL     string          `json:"url"`
	Headers []requestHeader `json:"headers"`
}

// rebuildRequest is the request of a delivery to a webhook (as stored now).
func (d *Dispatcher) rebuildRequest(dl *Delivery, wh *Webhook) deliveryRequest {
	hs := []requestHeader{
		{Name: "webhook-id", Value: dl.ID, Source: headerFixed},
		{Name: "webhook-timestamp", Source: headerAttempt},
		{Name: "webhook-signature", Source: headerSigned},
		{Name: "Content-Type", Value: "application/json", Source: headerFixed},
		{Name: "User-Agent", Value: userAgent, Source: headerFixed},
	}
	if n := len(dl.History); n > 0 {
		hs[1].Value = strconv.FormatInt(dl.History[n-1].At.Unix(), 10)
	}
	if d.opts.Tracer != nil {
		hs = append(hs, requestHeader{Name: "traceparent", Source: headerSigned})
	}
	if a := wh.Auth; a != nil && (a.Basic != nil || a.Bearer != "" || a.OAuth2 != nil) {
		hs = append(hs, requestHeader{Name: "Authorization", Source: headerEndpoint})
	}
	names := make([]string, 0, len(wh.Headers))
	for name := range wh.Headers {
		names = append(names, name) // sent as spelled (endpoint.SetHeaders)
	}
	slices.Sort(names)
	for _, name := range names {
		hs = append(hs, requestHeader{Name: name, Source: headerEndpoint})
	}
	return deliveryRequest{Method: http.MethodPost, URL: wh.URL, Headers: hs}
}

// Request is a delivery's request as rebuilt (rebuildRequest), within a scope.
func (b adminBackend) Request(ctx context.Context, s api.Scope, id string) ([]byte, error) {
	dl, err := b.delivery(ctx, s, id)
	if err != nil {
		return nil, err
	}
	wh, _, err := b.d.webhooks.load(ctx, dl.WebhookID) // its secrets are not needed, sealed or not
	if err != nil {
		return nil, err
	}
	return encode(b.d.rebuildRequest(dl, &wh.Webhook), nil)
}
