package pgxoutbox

import "hash/fnv"

// keyLock is the advisory lock id of an order key of table: FNV-1a (64 bits) of the table, the tenant
// and the key, 0 for an unordered event (whose rows lock nothing). It is stored in the row
// (key_lock), so the relay locks a row's key with no hashing in SQL; two keys that share an id only
// wait for each other.
//
// Two locks are taken on it, in PostgreSQL's bigint advisory-lock space (an application's own
// advisory locks with the same ids would only wait on them):
//   - EnqueueTx takes pg_advisory_xact_lock(keyLock) before it inserts an ordered row, so the
//     transactions that enqueue events of one key commit one after another and the ids they are
//     given follow their commit order;
//   - a relay pass takes pg_try_advisory_xact_lock(keyLock # relayLockSalt) on each ordered row it
//     scans and claims the rows whose key it got: one pass at a time holds a key's rows, all of them
//     in id order.
func keyLock(table, tenant, orderKey string) int64 {
	if orderKey == "" {
		return 0
	}
	h := fnv.New64a()
	for _, s := range []string{table, tenant, orderKey} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	v := int64(h.Sum64())
	if v == 0 {
		v = 1 // 0 means unordered
	}
	return v
}

// relayLockSalt moves the relay's lock of a key away from the producers' (XOR), so that a relay
// holding a key does not make its producers wait, nor they it.
const relayLockSalt int64 = 0x5bd1e9955bd1e995
