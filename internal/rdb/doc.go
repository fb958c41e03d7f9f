// Package rdb is the library's Redis: every key (Keys, keys.go; the shards' hash tags and the delivery
// ids, layout.go and tags.go), every script as a file of lua/ (scripts.go says how a file becomes a
// script), the constants the scripts share with the Go code (consts.go), and the schema comment
// (schema.go), the truth about every key the library writes, which a test of the root package checks
// against the keys a workload leaves in Redis.
//
// WebhookRecord (webhook_record.go) is a webhook as the registry's hash stores it: its JSON, the
// secret it rotates away from, its credentials sealed at rest.
//
// The reads are typed functions of a client and the Keys, each one round trip (a pipeline or a
// script) unless it says otherwise: a webhook's index of deliveries and the records it names
// (index.go), an order key's sequence (seq.go), the schedule's counts (counts.go) and Stats' reads
// (stats.go), the registry's subscribers and webhooks by id (registry.go); EvalAll (eval.go) runs a
// script per shard in one pipeline, again with EVAL for a server that lost it.
package rdb
