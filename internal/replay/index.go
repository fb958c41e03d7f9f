package replay

import "github.com/smartdrop/webhooks/internal/rdb"

// IndexArgs are the claim script's replay arguments for an event (its id scoped by its tenant) of a
// shard: the tenant's replay key, the mode (rdb.ReplayOff when the index is off, rdb.ReplayPrune when
// pruneDue says the key is due a prune, else rdb.ReplayAdd) and the entry.
func IndexArgs(keys rdb.Keys, on bool, shard int, scoped string, pruneDue func(key string) bool) (key, mode, entry string) {
	tenant, id := rdb.SplitScopedEventID(scoped)
	key = keys.Replay(shard, tenant)
	switch {
	case !on:
		return key, rdb.ReplayOff, id
	case pruneDue(key):
		return key, rdb.ReplayPrune, id
	}
	return key, rdb.ReplayAdd, id
}
