package amqpdest

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// Defaults and bounds of Options.
const (
	// DefaultMaxInFlight is Options.MaxInFlight's default.
	DefaultMaxInFlight = 128
	// MaxInFlightLimit bounds Options.MaxInFlight: RabbitMQ's default channel_max is 2047, and each
	// publish in flight has a channel of its own.
	MaxInFlightLimit = 2047
	// DefaultMaxConnections is Options.MaxConnections' default.
	DefaultMaxConnections = 100
	// MaxConnectionsLimit bounds Options.MaxConnections.
	MaxConnectionsLimit = 10_000
	// DefaultIdleTimeout is Options.IdleTimeout's default.
	DefaultIdleTimeout = 5 * time.Minute
	// DefaultHeartbeat is Options.Heartbeat's default.
	DefaultHeartbeat = 10 * time.Second
	// DefaultCloseTimeout is Options.CloseTimeout's default.
	DefaultCloseTimeout = 5 * time.Second
)

// ErrInvalidOptions is wrapped by New's error for Options out of their bounds.
var ErrInvalidOptions = errors.New("amqpdest: invalid options")

// Options tune a Destination. The zero Options are the production defaults.
type Options struct {
	// MaxInFlight bounds the publishes awaiting the broker's confirm on one connection: each has a
	// channel of its own in confirm mode, so it is also the most channels a connection opens. A Send
	// over it waits for a publish to be confirmed, within its context. A publish whose Send gave up
	// waiting for its confirm (the attempt's timeout) keeps its place until the broker answers it or
	// the connection is lost. Webhook.MaxConcurrency, which the engine enforces across replicas,
	// bounds one webhook's attempts; this bounds one broker connection's, whatever webhooks share it.
	// Defaults to DefaultMaxInFlight (128); at most MaxInFlightLimit (2047).
	MaxInFlight int

	// MaxConnections bounds the broker connections kept at once (one per broker address, user,
	// password and virtual host). A Send to a new one when all are taken closes the connection
	// unused for the longest; when every one is in use, the Send fails (and is retried by the
	// engine). Defaults to DefaultMaxConnections (100); at most MaxConnectionsLimit (10,000).
	MaxConnections int

	// IdleTimeout closes a connection no Send has used for this long (checked when Sends come).
	// Defaults to DefaultIdleTimeout (5 minutes); at least 1s, at most 24 hours.
	IdleTimeout time.Duration

	// Heartbeat is the AMQP heartbeat interval proposed to the broker (the broker may lower it): a
	// connection whose broker stays silent for three of them is taken as lost. Defaults to
	// DefaultHeartbeat (10s); at least 1s, at most 10 minutes.
	Heartbeat time.Duration

	// CloseTimeout bounds the close handshake of each connection Close (or the idle timeout) closes.
	// Defaults to DefaultCloseTimeout (5s); at most 1 minute.
	CloseTimeout time.Duration

	// TLSConfig is the TLS configuration of amqps connections (a private CA's RootCAs, a client
	// certificate); its ServerName is always set to the URL's host. Defaults to nil: the system's
	// roots, TLS 1.2 at least.
	TLSConfig *tls.Config

	// Logger receives connection events (connected, lost, closed when idle), naming the broker's
	// address and virtual host, never a credential. Defaults to nil: nothing is logged.
	Logger *slog.Logger
}

// withDefaults returns o with its defaults filled in, or an error wrapping ErrInvalidOptions that
// names the field out of bounds.
func (o Options) withDefaults() (Options, error) {
	ints := []struct {
		name       string
		v          *int
		def, limit int
	}{
		{"MaxInFlight", &o.MaxInFlight, DefaultMaxInFlight, MaxInFlightLimit},
		{"MaxConnections", &o.MaxConnections, DefaultMaxConnections, MaxConnectionsLimit},
	}
	for _, f := range ints {
		switch {
		case *f.v == 0:
			*f.v = f.def
		case *f.v < 0 || *f.v > f.limit:
			return o, fmt.Errorf("%w: %s is %d: it must be between 1 and %d (0 for the default, %d)",
				ErrInvalidOptions, f.name, *f.v, f.limit, f.def)
		}
	}
	durations := []struct {
		name            string
		v               *time.Duration
		def, min, limit time.Duration
	}{
		{"IdleTimeout", &o.IdleTimeout, DefaultIdleTimeout, time.Second, 24 * time.Hour},
		{"Heartbeat", &o.Heartbeat, DefaultHeartbeat, time.Second, 10 * time.Minute},
		{"CloseTimeout", &o.CloseTimeout, DefaultCloseTimeout, time.Millisecond, time.Minute},
	}
	for _, f := range durations {
		switch {
		case *f.v == 0:
			*f.v = f.def
		case *f.v < f.min || *f.v > f.limit:
			return o, fmt.Errorf("%w: %s is %s: it must be between %s and %s (0 for the default, %s)",
				ErrInvalidOptions, f.name, *f.v, f.min, f.limit, f.def)
		}
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o, nil
}
