// Package rdb is the library's Redis: every key (Keys, keys.go; the shards' hash tags and the delivery
// ids, layout.go and tags.go), every script as a file of lua/ (scripts.go says how a file becomes a
// script), the constants the scripts share with the Go code (consts.go), and the schema comment
// (schema.go), the truth about every key the library writes, which a test of the root package checks
// against the keys a workload leaves in Redis.
//
// WebhookRecord (webhook_record.go) is a webhook as the registry's hash stores it: its JSON, the
// secret it rotates away from, its credentials sealed at rest.
package rdb
