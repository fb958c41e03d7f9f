package pgxoutbox

import (
	"fmt"
	"log/slog"
	"regexp"
	"time"
)

// Defaults of Options: a zero field takes these.
const (
	// DefaultTable is the outbox table's name.
	DefaultTable = "webhooks_outbox"
	// DefaultBatchSize is the most rows one relay pass claims.
	DefaultBatchSize = 100
	// DefaultPollInterval is how long an idle relay waits for a notification before it looks anyway.
	DefaultPollInterval = 250 * time.Millisecond
	// DefaultNotifyInterval is the least time between two transactions of one Outbox that carry a
	// NOTIFY.
	DefaultNotifyInterval = 50 * time.Millisecond
	// DefaultConcurrency is how many passes one Run keeps going at once.
	DefaultConcurrency = 2
	// DefaultEnqueueConcurrency is how many Enqueue calls one pass makes at once.
	DefaultEnqueueConcurrency = 64
	// DefaultRelayTimeout bounds one pass's Enqueue calls.
	DefaultRelayTimeout = 30 * time.Second
	// DefaultMaxBackoff is the longest wait between passes while PostgreSQL or Redis fail them.
	DefaultMaxBackoff = 5 * time.Second
)

// Bounds of Options.
const (
	MaxBatchSize          = 500
	MinPollInterval       = 10 * time.Millisecond
	MaxPollInterval       = time.Minute
	MaxNotifyInterval     = 10 * time.Second
	MaxConcurrency        = 64
	MaxEnqueueConcurrency = 256
	MinRelayTimeout       = time.Second
	MaxRelayTimeout       = 10 * time.Minute
	MinMaxBackoff         = 100 * time.Millisecond
	MaxMaxBackoff         = 5 * time.Minute
	// MaxLastErrorBytes bounds a row's last_error: a longer error is cut there.
	MaxLastErrorBytes = 1024
	// MaxTableLen is the longest Options.Table, in bytes: the names of its indexes add up to 8 bytes
	// to it within PostgreSQL's 63.
	MaxTableLen = 48
)

// Options configure an Outbox. The zero value of every field means its default; New refuses a value
// out of bounds with an error wrapping ErrInvalidOptions. Every process that writes to or relays one
// outbox must use the same Table.
type Options struct {
	// Table is the outbox table: a lowercase name ([a-z_][a-z0-9_]*, at most MaxTableLen bytes),
	// found through the connection's search_path (set it on the pool to use another schema). Every
	// statement quotes it, so a reserved word (order, user) names a table too.
	// Defaults to DefaultTable ("webhooks_outbox"). Migrate creates it; its NOTIFY channel has the
	// same name.
	Table string

	// BatchSize is the most rows one relay pass claims, in 1–MaxBatchSize (500). Defaults to
	// DefaultBatchSize (100). A pass holds its rows (and the order keys among them) until it commits;
	// a larger batch costs fewer transactions per event and more waiting for the rows that follow a
	// slow one. Each order key in a batch holds one advisory lock, an entry of PostgreSQL's shared lock
	// table (max_locks_per_transaction × max_connections entries: 6,400 by default), so keep BatchSize
	// × Concurrency × replicas well below its size.
	BatchSize int

	// PollInterval is how long a relay that found nothing waits for a notification before it looks
	// anyway, in MinPollInterval (10ms)–MaxPollInterval (1m). Defaults to DefaultPollInterval (250ms).
	// It bounds the delay of a row whose transaction carried no NOTIFY (see NotifyInterval); an idle
	// relay costs PostgreSQL one small transaction per PollInterval and Concurrency.
	PollInterval time.Duration

	// NotifyInterval is the least time between two transactions of this Outbox whose EnqueueTx adds a
	// NOTIFY that wakes the relays, up to MaxNotifyInterval (10s); negative: never notify (the relays
	// then poll only). Defaults to DefaultNotifyInterval (50ms). PostgreSQL commits notifying
	// transactions one at a time, each with its own WAL flush, so a NOTIFY in every transaction caps
	// the producers (measured here: 587 commits/s with one in each, 4,982 without; BENCHMARKS.md).
	// A transaction that carries none is relayed by a relay already busy, woken by another
	// notification, or at its next poll.
	NotifyInterval time.Duration

	// Concurrency is how many passes one Run keeps going at once, each on its own connection of the
	// pool, in 1–MaxConcurrency (64). Defaults to DefaultConcurrency (2). Run holds one more
	// connection to LISTEN, so the pool's MaxConns must be at least Concurrency+1 (New checks).
	Concurrency int

	// EnqueueConcurrency is how many Dispatcher.Enqueue calls one pass makes at once, in
	// 1–MaxEnqueueConcurrency (256). Defaults to DefaultEnqueueConcurrency (64). The rows of one order
	// key are always enqueued one at a time, in order.
	EnqueueConcurrency int

	// RelayTimeout bounds the Enqueue calls of one pass, in MinRelayTimeout (1s)–MaxRelayTimeout
	// (10m); defaults to DefaultRelayTimeout (30s). The pass's transaction sets
	// idle_in_transaction_session_timeout to RelayTimeout + 5s, so PostgreSQL ends the session of a
	// relay that hangs (or is cut off) and its rows are relayed by another.
	RelayTimeout time.Duration

	// MaxBackoff is the longest a relay waits between passes while PostgreSQL or Redis fail them (the
	// wait starts at 100ms and doubles), in MinMaxBackoff (100ms)–MaxMaxBackoff (5m). Defaults to
	// DefaultMaxBackoff (5s).
	MaxBackoff time.Duration

	// Logger receives the relay's logs: a failed pass (warn), a row held (error: its error, or for an
	// invalid event, which its error may quote, a pointer to the row's last_error), and each pass's
	// counts (debug). Defaults to none.
	Logger *slog.Logger
}

var tableName = regexp.MustCompile(`^[a-z_][a-z0-9_]*$`)

// withDefaults returns o with every zero field set to its default, or an error wrapping
// ErrInvalidOptions for a field out of bounds.
func (o Options) withDefaults() (Options, error) {
	orDefault(&o.Table, DefaultTable)
	orDefault(&o.BatchSize, DefaultBatchSize)
	orDefault(&o.PollInterval, DefaultPollInterval)
	orDefault(&o.NotifyInterval, DefaultNotifyInterval)
	orDefault(&o.Concurrency, DefaultConcurrency)
	orDefault(&o.EnqueueConcurrency, DefaultEnqueueConcurrency)
	orDefault(&o.RelayTimeout, DefaultRelayTimeout)
	orDefault(&o.MaxBackoff, DefaultMaxBackoff)
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	switch {
	case len(o.Table) > MaxTableLen || !tableName.MatchString(o.Table):
		return o, fmt.Errorf("%w: Table must be [a-z_][a-z0-9_]*, at most %d bytes", ErrInvalidOptions, MaxTableLen)
	case o.BatchSize < 1 || o.BatchSize > MaxBatchSize:
		return o, fmt.Errorf("%w: BatchSize must be in [1, %d]", ErrInvalidOptions, MaxBatchSize)
	case o.PollInterval < MinPollInterval || o.PollInterval > MaxPollInterval:
		return o, fmt.Errorf("%w: PollInterval must be in [%s, %s]", ErrInvalidOptions, MinPollInterval, MaxPollInterval)
	case o.NotifyInterval > MaxNotifyInterval:
		return o, fmt.Errorf("%w: NotifyInterval must be at most %s", ErrInvalidOptions, MaxNotifyInterval)
	case o.Concurrency < 1 || o.Concurrency > MaxConcurrency:
		return o, fmt.Errorf("%w: Concurrency must be in [1, %d]", ErrInvalidOptions, MaxConcurrency)
	case o.EnqueueConcurrency < 1 || o.EnqueueConcurrency > MaxEnqueueConcurrency:
		return o, fmt.Errorf("%w: EnqueueConcurrency must be in [1, %d]", ErrInvalidOptions, MaxEnqueueConcurrency)
	case o.RelayTimeout < MinRelayTimeout || o.RelayTimeout > MaxRelayTimeout:
		return o, fmt.Errorf("%w: RelayTimeout must be in [%s, %s]", ErrInvalidOptions, MinRelayTimeout, MaxRelayTimeout)
	case o.MaxBackoff < MinMaxBackoff || o.MaxBackoff > MaxMaxBackoff:
		return o, fmt.Errorf("%w: MaxBackoff must be in [%s, %s]", ErrInvalidOptions, MinMaxBackoff, MaxMaxBackoff)
	}
	return o, nil
}

// orDefault sets *v to def when it is the zero value.
func orDefault[T comparable](v *T, def T) {
	var zero T
	if *v == zero {
		*v = def
	}
}
