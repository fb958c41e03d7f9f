package webhooks

// Where a webhook's messages go: its URL's scheme picks one of the Dispatcher's destinations (the
// built-in HTTP one, and Options.Destinations), which makes each attempt (attempt.go).

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/smartdrop/webhooks/destination"
	"github.com/smartdrop/webhooks/internal/egress"
	"github.com/smartdrop/webhooks/internal/endpoint"
	"github.com/smartdrop/webhooks/internal/httpdest"
)

type (
	// Destination sends a webhook's messages: the built-in HTTP destination serves http and https,
	// and Options.Destinations add others (amqpdest, natsdest, kafkadest, or one of your own). It is
	// destination.Destination, whose package doc says what Send's result means.
	Destination = destination.Destination
	// Message is one attempt of a delivery, as a Destination sends it (destination.Message).
	Message = destination.Message
)

// destinations are a Dispatcher's destinations by URL scheme.
type destinations struct {
	byScheme map[string]Destination
	http     *httpdest.Destination // the built-in one, which also authenticates (EndpointAuth)
	urls     *urlCache             // webhook URLs parsed, for the attempts
}

// maxParsedURLs bounds the parsed URLs a Dispatcher keeps: beyond it, they are parsed again.
const maxParsedURLs = 10_000

// urlCache keeps webhook URLs parsed, so that an attempt does not parse its webhook's URL again. Safe
// for concurrent use.
type urlCache struct {
	m sync.Map // raw URL -> *url.URL
	n atomic.Int64
}

// parse returns raw parsed, from the cache or parsed now; the caller must not modify it.
func (c *urlCache) parse(raw string) (*url.URL, error) {
	if u, ok := c.m.Load(raw); ok {
		return u.(*url.URL), nil
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, err
	}
	if c.n.Add(1) > maxParsedURLs { // mostly URLs no webhook has any longer
		c.m.Clear()
		c.n.Store(1)
	}
	c.m.Store(raw, u)
	return u, nil
}

// newDestinations returns the destinations of the built-in HTTP one and the user's: a user's
// destination of scheme http or https takes the built-in one's place for that scheme. Two user
// destinations of one scheme, or one without schemes, is an error wrapping ErrInvalidOptions.
func newDestinations(builtin *httpdest.Destination, user []Destination) (destinations, error) {
	ds := destinations{byScheme: map[string]Destination{}, http: builtin, urls: &urlCache{}}
	for _, s := range builtin.Schemes() {
		ds.byScheme[s] = builtin
	}
	taken := map[string]bool{}
	for i, d := range user {
		if d == nil {
			return ds, fmt.Errorf("%w: Destinations[%d] is nil", ErrInvalidOptions, i)
		}
		schemes := d.Schemes()
		if len(schemes) == 0 {
			return ds, fmt.Errorf("%w: Destinations[%d] (%T) serves no URL scheme", ErrInvalidOptions, i, d)
		}
		for _, s := range schemes {
			s = strings.ToLower(s)
			if taken[s] {
				return ds, fmt.Errorf("%w: two Destinations serve the URL scheme %q: keep one", ErrInvalidOptions, s)
			}
			taken[s], ds.byScheme[s] = true, d
		}
	}
	return ds, nil
}

// of returns the destination of a URL's scheme.
func (ds destinations) of(u *url.URL) (Destination, bool) {
	d, ok := ds.byScheme[u.Scheme] // url.Parse lowers the scheme
	return d, ok
}

// checkURL is the URL rule of Create and Update: the egress guard's (egress.Policy.ParseURL: a host,
// its literal address allowed) and then the URL's destination's Check. Its error wraps
// ErrInvalidWebhook.
func (ds destinations) checkURL(raw string, p egress.Policy) error {
	u, err := p.ParseURL(raw)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidWebhook, err)
	}
	d, ok := ds.of(u)
	if !ok {
		return fmt.Errorf("%w: url scheme %q is served by no destination: use one of %s, or add a destination for it to Options.Destinations",
			ErrInvalidWebhook, u.Scheme, strings.Join(ds.schemes(), ", "))
	}
	if err := d.Check(u); err != nil {
		return fmt.Errorf("%w: url: %w", ErrInvalidWebhook, err)
	}
	return nil
}

// schemes are the URL schemes served, sorted.
func (ds destinations) schemes() []string {
	out := make([]string, 0, len(ds.byScheme))
	for s := range ds.byScheme {
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}

// target is a stored webhook's URL, parsed, and its destination; ok is false when its scheme has no
// destination here (a webhook saved by a Dispatcher with other Options.Destinations).
func (ds destinations) target(wh *storedWebhook) (*url.URL, Destination, error) {
	u, err := ds.urls.parse(wh.URL)
	if err != nil {
		return nil, nil, fmt.Errorf("url %q does not parse", endpoint.RedactURL(wh.URL))
	}
	d, ok := ds.of(u)
	if !ok {
		return nil, nil, fmt.Errorf("url scheme %q is served by no destination of this Dispatcher: add one to Options.Destinations", u.Scheme)
	}
	return u, d, nil
}
