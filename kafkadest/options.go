package kafkadest

import (
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// ErrInvalidOptions is wrapped by New's error for Options out of their bounds.
var ErrInvalidOptions = errors.New("kafkadest: invalid options")

// Defaults and bounds of Options.
const (
	DefaultMaxClients         = 64
	MaxMaxClients             = 4096
	DefaultIdleTimeout        = 5 * time.Minute
	MinIdleTimeout            = time.Second
	MaxIdleTimeout            = 24 * time.Hour
	MaxLinger                 = time.Second
	DefaultMaxBufferedRecords = 10_000
	MaxMaxBufferedRecords     = 1_000_000
	DefaultMaxUnacked         = 10_000
	MaxMaxUnacked             = 1_000_000
	DefaultDialTimeout        = 10 * time.Second
	MaxDialTimeout            = time.Minute
	DefaultClientID           = "webhooks"
)

// Options configure a Destination. The zero value of every field means its default; New refuses a
// value out of bounds with an error wrapping ErrInvalidOptions.
type Options struct {
	// MaxClients bounds the Kafka clients kept at once: one per (seed brokers, credentials) of the
	// webhooks' URLs, shared by every webhook and goroutine that sends to them. When a Send needs
	// one more, the client unused for longest is closed; when every client has a Send in flight,
	// the Send fails (a Rejected failure, not counted by the breaker, in words naming this option). Defaults to
	// DefaultMaxClients (64); at most MaxMaxClients (4096).
	MaxClients int
	// IdleTimeout closes a client no Send has used for this long (at the next Send that looks for a
	// client, or at Close); a later Send opens it again. Defaults to DefaultIdleTimeout (5 minutes);
	// at least MinIdleTimeout (1s), at most MaxIdleTimeout (24 hours).
	IdleTimeout time.Duration
	// Linger is how long a partition's records wait for more before their batch goes out (Kafka's
	// linger.ms). 0 sends at once: records still batch while up to 5 produce requests per broker
	// are in flight. Defaults to 0; at most MaxLinger (1s). Negative is refused.
	Linger time.Duration
	// MaxBufferedRecords bounds the records one client holds before the brokers acknowledge them;
	// a Send beyond waits for room, within its context. Defaults to DefaultMaxBufferedRecords
	// (10,000); at most MaxMaxBufferedRecords (1,000,000).
	MaxBufferedRecords int
	// MaxUnacked bounds the messages remembered whose Send ended (its context done) before the
	// brokers acknowledged their produce: the next attempt of such a message waits for that produce
	// rather than writing the message again (see the package doc). Beyond it the oldest is
	// forgotten. Defaults to DefaultMaxUnacked (10,000); at most MaxMaxUnacked (1,000,000).
	MaxUnacked int
	// DialTimeout bounds each connection's dial (the egress guard's checks, TCP and the SASL
	// handshake's connect). Defaults to DefaultDialTimeout (10s); at most MaxDialTimeout (1 minute).
	DialTimeout time.Duration
	// ClientID is the client.id the brokers see (their logs and quotas). Defaults to
	// DefaultClientID ("webhooks"); at most 255 bytes.
	ClientID string
	// Logger receives the Kafka client's warnings and errors (never a password or a message body).
	// Defaults to none.
	Logger *slog.Logger
}

// withDefaults returns o with its defaults filled in, or an error wrapping ErrInvalidOptions that
// names the field, its bound and its default.
func (o Options) withDefaults() (Options, error) {
	ints := []struct {
		name        string
		v           *int
		limit, def  int
		defaultWord string
	}{
		{"MaxClients", &o.MaxClients, MaxMaxClients, DefaultMaxClients, "64"},
		{"MaxBufferedRecords", &o.MaxBufferedRecords, MaxMaxBufferedRecords, DefaultMaxBufferedRecords, "10000"},
		{"MaxUnacked", &o.MaxUnacked, MaxMaxUnacked, DefaultMaxUnacked, "10000"},
	}
	for _, f := range ints {
		if *f.v == 0 {
			*f.v = f.def
		}
		if *f.v < 1 || *f.v > f.limit {
			return o, fmt.Errorf("%w: %s is %d: it must be in [1, %d] (0 takes the default, %s)",
				ErrInvalidOptions, f.name, *f.v, f.limit, f.defaultWord)
		}
	}
	durations := []struct {
		name           string
		v              *time.Duration
		lo, hi, def    time.Duration
		zeroIsDisabled bool
	}{
		{"IdleTimeout", &o.IdleTimeout, MinIdleTimeout, MaxIdleTimeout, DefaultIdleTimeout, false},
		{"DialTimeout", &o.DialTimeout, time.Millisecond, MaxDialTimeout, DefaultDialTimeout, false},
		{"Linger", &o.Linger, 0, MaxLinger, 0, true},
	}
	for _, f := range durations {
		if *f.v == 0 && !f.zeroIsDisabled {
			*f.v = f.def
		}
		if *f.v < f.lo || *f.v > f.hi {
			return o, fmt.Errorf("%w: %s is %s: it must be in [%s, %s] (0 takes the default, %s)",
				ErrInvalidOptions, f.name, *f.v, f.lo, f.hi, f.def)
		}
	}
	if o.ClientID == "" {
		o.ClientID = DefaultClientID
	}
	if len(o.ClientID) > 255 {
		return o, fmt.Errorf("%w: ClientID is %d bytes: at most 255", ErrInvalidOptions, len(o.ClientID))
	}
	return o, nil
}
