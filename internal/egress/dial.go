package egress

// The guard's dialer, for every destination: HTTP's transport and a broker client dial through it.

import (
	"context"
	"net"
	"time"
)

// DialFunc opens a network connection.
type DialFunc = func(ctx context.Context, network, address string) (net.Conn, error)

// Dialer returns the dial function of p, with connectTimeout(timeout) per connect: one that checks
// every resolved address against p before connecting (a plain dialer when p.AllowPrivate).
func (p Policy) Dialer(timeout time.Duration) DialFunc {
	d := &net.Dialer{Timeout: connectTimeout(timeout), KeepAlive: 30 * time.Second, Resolver: p.resolver}
	if !p.AllowPrivate {
		d.ControlContext = p.control
	}
	return d.DialContext
}

// dialKey is the context key of the dial function a request is to use (WithDial).
type dialKey struct{}

// WithDial returns ctx carrying dial, which a guarded client's connection for a request made with
// ctx uses instead of its own guarded dialer: a destination's Message.Dial.
func WithDial(ctx context.Context, dial DialFunc) context.Context {
	return context.WithValue(ctx, dialKey{}, dial)
}

// contextDial is a guarded transport's DialContext: the dial function ctx carries (WithDial), else
// guarded.
func contextDial(guarded DialFunc) DialFunc {
	return func(ctx context.Context, network, address string) (net.Conn, error) {
		if dial, ok := ctx.Value(dialKey{}).(DialFunc); ok && dial != nil {
			return dial(ctx, network, address)
		}
		return guarded(ctx, network, address)
	}
}
