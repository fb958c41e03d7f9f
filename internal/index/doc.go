// Package index reads the webhooks' indexes of deliveries (one stream per webhook and shard,
// rdb.Keys.Index): a listing's position in them and its opaque cursor (Pos, cursor.go), the decoding
// and merging of their entries newest first (Entry, entry.go), the pages of one webhook's deliveries
// (Reader.Page, page.go) and the search across a scope's webhooks under a budget of Redis commands
// (Reader.Search, search.go). Its Redis reads are internal/rdb's (ReadIndexes, ReadIndexedRecords,
// the search.lua script); the root's DeliveryRepo.Page and the admin API's search call it.
package index
