package webhooks

// The bounds of the admin API's search of deliveries across webhooks (internal/admin, internal/index).

import (
	"github.com/smartdrop/webhooks/internal/admin"
	"github.com/smartdrop/webhooks/internal/index"
)

// MaxSearchWebhooks bounds the webhooks one GET /deliveries examines (the scope's first, in the
// registry's order); a search reaches no delivery of the others.
const MaxSearchWebhooks = admin.MaxSearchWebhooks

// Bounds of one search of deliveries across webhooks (GET /deliveries without an id).
const (
	// SearchCommandBudget (1,800) is the most Redis commands one search costs the server, the commands
	// its scripts call included; a search that spends it stops with a cursor. Its first round reads each
	// of the scope's (webhook, shard) indexes once whatever the budget, so with more indexes than about
	// the budget that round costs more.
	SearchCommandBudget = index.SearchCommandBudget
	// SearchExamineBudget (2,048) is the most index entries one search examines, whatever its filters.
	SearchExamineBudget = index.SearchExamineBudget
)

// Why a search stopped (the admin API's SearchPage.Stopped).
const (
	// SearchStoppedEnd ("end"): no delivery in the scope is left to examine; there is no cursor.
	SearchStoppedEnd = index.SearchStoppedEnd
	// SearchStoppedLimit ("limit"): the page holds its limit; the cursor continues after the last.
	SearchStoppedLimit = index.SearchStoppedLimit
	// SearchStoppedBudget ("budget"): the search spent a budget first; the cursor continues where it
	// stopped.
	SearchStoppedBudget = index.SearchStoppedBudget
)
