package webhooks

// The bounds of the admin API's search of deliveries across webhooks (internal/admin, internal/index).

import (
	"github.com/smartdrop/webhooks/internal/admin"
	"github.com/smartdrop/webhooks/internal/index"
)

// MaxSearchWebhooks bounds the webhooks one GET /deliveries examines where it reads each webhook's
// own keys (the scope's first, in the registry's order): a search by event id, and the operator's
// search without an id. A portal's search without an id reads its tenant's index and reaches all.
const MaxSearchWebhooks = admin.MaxSearchWebhooks

// Bounds of one search of deliveries across webhooks (GET /deliveries without an id).
const (
	// SearchCommandBudget (1,800) is the most Redis commands one search costs the server, the commands
	// its scripts call included; a search that spends it stops with a cursor. A portal's search reads
	// its tenant's index, one per shard; the operator's reads each webhook's, and its first round reads
	// each (webhook, shard) index once whatever the budget, so with more of them than about the budget
	// that round costs more.
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
