package pgxoutbox

import (
	"context"
	"time"
)

// Stats is a snapshot of an outbox table.
type Stats struct {
	// Pending is the rows waiting to be relayed: committed, not held.
	Pending int64
	// Failing is the pending rows whose last relay failed (Redis down, a timeout): they are retried.
	Failing int64
	// Held is the rows kept with their error (Enqueue refused their event for good), never relayed
	// again: their last_error says why.
	Held int64
	// OldestPending is the age of the oldest pending row (since it was written, by PostgreSQL's
	// clock); 0 when none is.
	OldestPending time.Duration
}

// Stats reads the outbox table's figures, in one statement that reads the whole table: cheap while
// the relays keep up, since the table then holds only the rows not yet relayed (and the held ones).
func (o *Outbox) Stats(ctx context.Context) (*Stats, error) {
	var s Stats
	var age float64
	if err := o.pool.QueryRow(ctx, o.sql.stats).Scan(&s.Pending, &s.Failing, &s.Held, &age); err != nil {
		return nil, sqlError("stats", err)
	}
	s.OldestPending = time.Duration(age * float64(time.Second))
	return &s, nil
}
