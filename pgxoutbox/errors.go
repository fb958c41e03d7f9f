package pgxoutbox

// Every sentinel error of the package. Calls wrap them with %w and context; test with errors.Is.

import (
	"errors"
	"fmt"

	"github.com/smartdrop/webhooks"
)

// ErrInvalidOptions is returned (wrapped) by New for Options it cannot use, and for a nil pool or
// Dispatcher. It wraps webhooks.ErrInvalidOptions.
var ErrInvalidOptions = fmt.Errorf("pgxoutbox: %w", webhooks.ErrInvalidOptions)

// ErrNotMigrated is returned (wrapped) by Run, Stats, EnqueueTx and EnqueueSQLTx when the outbox
// table or one of its columns does not exist: run Migrate (or schema.sql) first.
var ErrNotMigrated = errors.New("pgxoutbox: outbox table missing or outdated: run Migrate")
