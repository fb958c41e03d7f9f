package natsdest

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// Defaults and bounds of Options.
const (
	DefaultConnectTimeout = 5 * time.Second
	MaxConnectTimeout     = time.Minute

	DefaultIdleTimeout = 5 * time.Minute
	MinIdleTimeout     = time.Second
	MaxIdleTimeout     = 24 * time.Hour

	DefaultMaxConnections = 1000
	MaxMaxConnections     = 100_000

	DefaultReconnectWait = time.Second
	MaxReconnectWait     = time.Minute
)

// ErrInvalidOptions is wrapped by New's error for an Options field out of its bounds.
var ErrInvalidOptions = errors.New("natsdest: invalid options")

// Options configure a Destination. The zero value of every field means its default; New refuses a
// value out of bounds with an error wrapping ErrInvalidOptions.
type Options struct {
	// ConnectTimeout bounds making a connection: the TCP connect through Message.Dial, the TLS
	// handshake and NATS's own (INFO, CONNECT, PING/PONG); also each reconnect's, and how long Close
	// waits for a connection to drain. A Send whose context ends first returns then, and the
	// connection goes on being made for the next Send. Must not be negative; at most
	// MaxConnectTimeout (1 minute). Defaults to 5s.
	ConnectTimeout time.Duration

	// IdleTimeout closes a connection no Send has used for this long (a tenant's server no webhook
	// sends to any longer). The next Send to it connects again. At least MinIdleTimeout (1s), at most
	// MaxIdleTimeout (24 hours). Defaults to 5 minutes.
	IdleTimeout time.Duration

	// MaxConnections bounds the connections kept at once, one per (scheme, servers, credentials): a
	// Send that needs one more fails (a failed attempt, retried) in words naming this option. Must not
	// be negative; at most MaxMaxConnections (100,000). Defaults to 1,000.
	MaxConnections int

	// ReconnectWait is the pause between attempts to reconnect a lost connection (nats.go reconnects
	// until the connection is closed as idle or by Close). While a connection reconnects, a Send
	// through it fails at once, in words, and the engine retries it by its schedule. Must not be
	// negative; at most MaxReconnectWait (1 minute). Defaults to 1s.
	ReconnectWait time.Duration

	// TLSConfig configures the connections of tls:// URLs: root CAs, client certificates. Its
	// ServerName defaults to the URL's host. A nats:// URL whose server requires TLS is upgraded with
	// the system's roots. Defaults to the system's roots and TLS 1.2 or later.
	TLSConfig *tls.Config

	// Logger receives connection events (disconnected, reconnected, closed) and the servers'
	// asynchronous errors, naming the server's host and port, never credentials or messages.
	// Defaults to none.
	Logger *slog.Logger
}

// withDefaults returns o with its zero fields set to their defaults, or an error wrapping
// ErrInvalidOptions for a field out of its bounds.
func (o Options) withDefaults() (Options, error) {
	bad := func(format string, args ...any) (Options, error) {
		return o, fmt.Errorf("%w: "+format, append([]any{ErrInvalidOptions}, args...)...)
	}
	switch {
	case o.ConnectTimeout < 0 || o.ConnectTimeout > MaxConnectTimeout:
		return bad("ConnectTimeout %s is not within 0 (the default, %s) and %s", o.ConnectTimeout, DefaultConnectTimeout, MaxConnectTimeout)
	case o.IdleTimeout != 0 && (o.IdleTimeout < MinIdleTimeout || o.IdleTimeout > MaxIdleTimeout):
		return bad("IdleTimeout %s is not within %s and %s (0 for the default, %s)", o.IdleTimeout, MinIdleTimeout, MaxIdleTimeout, DefaultIdleTimeout)
	case o.MaxConnections < 0 || o.MaxConnections > MaxMaxConnections:
		return bad("MaxConnections %d is not within 0 (the default, %d) and %d", o.MaxConnections, DefaultMaxConnections, MaxMaxConnections)
	case o.ReconnectWait < 0 || o.ReconnectWait > MaxReconnectWait:
		return bad("ReconnectWait %s is not within 0 (the default, %s) and %s", o.ReconnectWait, DefaultReconnectWait, MaxReconnectWait)
	}
	if o.ConnectTimeout == 0 {
		o.ConnectTimeout = DefaultConnectTimeout
	}
	if o.IdleTimeout == 0 {
		o.IdleTimeout = DefaultIdleTimeout
	}
	if o.MaxConnections == 0 {
		o.MaxConnections = DefaultMaxConnections
	}
	if o.ReconnectWait == 0 {
		o.ReconnectWait = DefaultReconnectWait
	}
	if o.TLSConfig == nil {
		o.TLSConfig = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o, nil
}
