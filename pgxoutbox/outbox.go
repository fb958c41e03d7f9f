package pgxoutbox

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/smartdrop/webhooks"
)

// Outbox writes events into the caller's PostgreSQL transactions (EnqueueTx, EnqueueSQLTx) and relays
// the committed ones to a Dispatcher (Run). It is safe for concurrent use; every replica of a service
// makes its own, on the same table.
type Outbox struct {
	pool *pgxpool.Pool
	d    *webhooks.Dispatcher
	opts Options
	sql  statements
	// lastNotify is when this Outbox last added a NOTIFY to a transaction (UnixNano): NotifyInterval.
	lastNotify atomic.Int64
	now        func() time.Time
}

// New returns an Outbox on pool's database that relays to d. It does no I/O: the table must exist
// before the first EnqueueTx or Run (Migrate). pool serves Run (Concurrency+1 connections), Stats,
// and nothing else: EnqueueTx writes on the caller's transaction.
func New(pool *pgxpool.Pool, d *webhooks.Dispatcher, opts Options) (*Outbox, error) {
	if pool == nil || d == nil {
		return nil, fmt.Errorf("%w: a pool and a Dispatcher are required", ErrInvalidOptions)
	}
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	if max := pool.Config().MaxConns; int64(opts.Concurrency)+1 > int64(max) {
		return nil, fmt.Errorf("%w: Run needs Concurrency+1 = %d connections, the pool has at most %d (pool_max_conns)",
			ErrInvalidOptions, opts.Concurrency+1, max)
	}
	return &Outbox{pool: pool, d: d, opts: opts, sql: newStatements(opts.Table), now: time.Now}, nil
}
