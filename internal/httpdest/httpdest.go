// Package httpdest is the built-in HTTP destination: a webhook whose URL is http or https receives
// each attempt as a POST of the signed body, authenticated as its EndpointAuth says
// (internal/endpoint), through the egress guard's client.
package httpdest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/smartdrop/webhooks/destination"
	"github.com/smartdrop/webhooks/internal/egress"
	"github.com/smartdrop/webhooks/internal/endpoint"
	"github.com/smartdrop/webhooks/internal/types"
)

const (
	// ResponseHead is how much of a response body an attempt keeps (Message.Response).
	ResponseHead = 1 << 10
	// maxResponseBody is how much of a response body an attempt reads before it stops.
	maxResponseBody = 64 << 10
	// maxRetryAfter bounds the Retry-After read here (the engine bounds it again, to an hour).
	maxRetryAfter = 24 * time.Hour
)

// Config is what an HTTP destination sends with.
type Config struct {
	// Client is the guarded client (endpoint.NewClient): it dials with a request's Message.Dial.
	Client *http.Client
	// Auth authenticates requests as their webhook's EndpointAuth says.
	Auth *endpoint.Authenticator
	// RequireHTTPS refuses http URLs (Options.RequireHTTPS).
	RequireHTTPS bool
	// UserAgent is every request's User-Agent.
	UserAgent string
}

// Destination is the HTTP destination. Safe for concurrent use.
type Destination struct {
	cfg       Config
	userAgent []string // every request's User-Agent value, shared (capped: an append copies)
}

// New returns the HTTP destination of c. It does no I/O.
func New(c Config) *Destination {
	return &Destination{cfg: c, userAgent: []string{c.UserAgent}[:1:1]}
}

// responseHeads holds the buffers that keep the start of a response body.
var responseHeads = sync.Pool{New: func() any { return new([ResponseHead]byte) }}

// Schemes are http and https.
func (d *Destination) Schemes() []string { return []string{"http", "https"} }

// Check refuses an http URL when https is required, and a URL that carries user info (credentials
// go in EndpointAuth, sealed at rest, never in an HTTP URL).
func (d *Destination) Check(u *url.URL) error {
	if u.Scheme == "http" && d.cfg.RequireHTTPS {
		return errors.New("url must be https (Options.RequireHTTPS is set)")
	}
	if u.User != nil {
		return errors.New("url must not carry user info: give credentials in auth")
	}
	return nil
}

// Send POSTs m without endpoint authentication.
func (d *Destination) Send(ctx context.Context, m *destination.Message) error {
	return d.SendAuth(ctx, m, nil)
}

// SendAuth POSTs m to its URL, authenticated as auth says (nil: no credentials), and reads the answer:
// nil for a 2xx; a 3xx (not followed) or a 4xx is a refusal (destination.Rejected), a 410 says the
// endpoint is gone, a 429 or 503 asks for its Retry-After, a 5xx or no answer says the endpoint is
// unwell. m.StatusCode and m.Response are set to the answer's status and the start of its body.
func (d *Destination) SendAuth(ctx context.Context, m *destination.Message, auth *types.EndpointAuth) error {
	ctx = egress.WithDial(ctx, m.Dial)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, m.URL.String(), bytes.NewReader(m.Body))
	if err != nil {
		return &destination.Error{Kind: destination.Permanent, Err: fmt.Errorf("bad request: %w", err)}
	}
	req.Header = m.Header
	req.Header["User-Agent"] = d.userAgent
	resp, err := d.cfg.Auth.Send(ctx, req, m.WebhookID, auth)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // the URL may carry credentials in its query: keep it out of records
		}
		return errors.New(egress.Words(err))
	}
	defer resp.Body.Close()
	m.StatusCode = resp.StatusCode
	head := responseHeads.Get().(*[ResponseHead]byte)
	n, err := io.ReadFull(resp.Body, head[:])
	m.Response = string(head[:n])
	// Read on, up to maxResponseBody in all, so the connection can be kept (into the same buffer: no
	// reader of its own to allocate).
	for read := n; err == nil && n > 0 && read < maxResponseBody; read += n {
		n, err = resp.Body.Read(head[:min(len(head), maxResponseBody-read)])
	}
	responseHeads.Put(head)
	return statusError(resp, time.Now())
}

// statusError is the failure an answer's status says, nil for a 2xx.
func statusError(resp *http.Response, now time.Time) error {
	code := resp.StatusCode
	switch {
	case code >= 200 && code < 300:
		return nil
	case code >= 300 && code < 400:
		return &destination.Error{Kind: destination.Rejected,
			Err: fmt.Errorf("HTTP %d redirect to %q not followed", code, resp.Header.Get("Location"))}
	case code == http.StatusGone:
		return &destination.Error{Kind: destination.Gone, Err: errors.New("HTTP 410 Gone")}
	case code == http.StatusTooManyRequests || code == http.StatusServiceUnavailable:
		return destination.RetryAfter(errors.New("HTTP "+strconv.Itoa(code)), ParseRetryAfter(resp.Header.Get("Retry-After"), now))
	case code >= 500:
		return errors.New("HTTP " + strconv.Itoa(code))
	}
	return &destination.Error{Kind: destination.Rejected, Err: errors.New("HTTP " + strconv.Itoa(code))}
}

// ParseRetryAfter reads a Retry-After header: seconds or an HTTP date; 0 for none or a past one.
func ParseRetryAfter(v string, now time.Time) time.Duration {
	if v == "" {
		return 0
	}
	if s, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && s > 0 {
		return time.Duration(min(s, int(maxRetryAfter/time.Second))) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return min(t.Sub(now), maxRetryAfter)
	}
	return 0
}

// Client is the guarded client it sends with.
func (d *Destination) Client() *http.Client { return d.cfg.Client }

// Auth is its endpoint authentication.
func (d *Destination) Auth() *endpoint.Authenticator { return d.cfg.Auth }

// CloseIdleConnections closes the idle keep-alive connections of its clients.
func (d *Destination) CloseIdleConnections() {
	d.cfg.Client.CloseIdleConnections()
	d.cfg.Auth.CloseIdleConnections()
}
