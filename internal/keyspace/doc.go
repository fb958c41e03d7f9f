// Package keyspace is the naming machinery of the library's Redis keyspace that needs no Redis: the
// event shards' hash tags, chosen by cluster slot so that the shards spread evenly over the masters
// of a Redis Cluster, and the delivery ids, which name their pair and their shard.
//
// The key names themselves, and the schema comment that lists every key, stay with the scripts that
// use them in the root package (delivery_repo.go): a key's layout and the KEYS block of the script
// that touches it are one fact.
package keyspace
