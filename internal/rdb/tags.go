package rdb

import (
	"fmt"
	"strconv"
	"sync"
)

// Shard tags.
//
// Every key of one event's deliveries carries its shard's hash tag, so that every script touches one
// hash slot. A Redis Cluster splits the 16384 slots into ranges, one or more per master; for the shards
// to spread evenly over the masters, shard i's tag is chosen by its slot: the tag of shard i of S is
// the first string "P:t<n>" (n = 0, 1, 2, …) whose CRC16 slot is the first slot of the i-th of S equal
// slot ranges, ⌊i·16384/S⌋. So any slot layout that splits at those boundaries (redis-cli --cluster
// create on M masters does, up to a slot) gives each master ⌊S/M⌋ or ⌈S/M⌉ shards. n stays below
// a few hundred thousand, so tags, keys and ids stay bounded.

const (
	// MaxShards bounds a keyspace's shard count: a delivery id holds its shard in two hex digits.
	MaxShards = 256
	// ClusterSlots is the number of Redis Cluster hash slots.
	ClusterSlots = 16384
	// maxTagSearch bounds the search for a tag (never reached: CRC16 over "P:t<n>" covers every slot
	// within a few hundred thousand n).
	maxTagSearch = 1 << 22
)

// crc16Table is crc16's byte-at-a-time table.
var crc16Table = func() (t [256]uint16) {
	for b := range t {
		crc := uint16(b) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
		t[b] = crc
	}
	return t
}()

// crc16 is Redis Cluster's CRC16 (XMODEM).
func crc16(s string) uint16 { return crc16From(0, s) }

// crc16From continues a CRC16 whose state after some first bytes is crc over the bytes of s.
func crc16From(crc uint16, s string) uint16 {
	for k := 0; k < len(s); k++ {
		crc = crc<<8 ^ crc16Table[byte(crc>>8)^s[k]]
	}
	return crc
}

// TagSlot is the hash slot of a hash tag's content.
func TagSlot(content string) int { return int(crc16(content)) % ClusterSlots }

// RangeStart is the first slot of the i-th of shards equal slot ranges.
func RangeStart(i, shards int) int { return i * ClusterSlots / shards }

// tagCache keeps the tags chosen per prefix and count (a search costs a few milliseconds).
var tagCache sync.Map // prefix + "/" + count -> []string

// SlotTags returns the hash tags ("{P:t<n>}") of shards shards chosen by slot (see the file comment).
// The slice is shared: callers must not change it.
func SlotTags(prefix string, shards int) []string {
	key := prefix + "/" + strconv.Itoa(shards)
	if tags, ok := tagCache.Load(key); ok {
		return tags.([]string)
	}
	tags := searchTags(prefix, shards)
	tagCache.Store(key, tags)
	return tags
}

// searchTags chooses the tags of SlotTags.
func searchTags(prefix string, shards int) []string {
	var want [ClusterSlots]int16 // slot -> shard + 1; 0: no shard starts there
	for i := range shards {
		want[RangeStart(i, shards)] = int16(i + 1)
	}
	tags := make([]string, shards)
	left := shards
	head := crc16(prefix + ":t") // every candidate starts so: only its digits are hashed per n
	buf := make([]byte, 0, 16)
	for n := 0; left > 0 && n < maxTagSearch; n++ {
		buf = strconv.AppendInt(buf[:0], int64(n), 10)
		i := int(want[int(crc16From(head, string(buf)))%ClusterSlots]) - 1
		if i >= 0 && tags[i] == "" {
			tags[i] = "{" + prefix + ":t" + string(buf) + "}"
			left--
		}
	}
	// Never taken in practice; were a slot unreachable, the first tag anywhere in the range will do.
	for i := range shards {
		for n := 0; tags[i] == "" && n < maxTagSearch; n++ {
			c := prefix + ":t" + strconv.Itoa(n)
			if s := TagSlot(c); s >= RangeStart(i, shards) && s < RangeStart(i+1, shards) {
				tags[i] = "{" + c + "}"
			}
		}
	}
	return tags
}

// FormatCount is the value stored for a keyspace of shards shards.
func FormatCount(shards int) string { return strconv.Itoa(shards) }

// ParseCount reads a stored shard count (FormatCount).
func ParseCount(v string) (int, error) {
	shards, err := strconv.Atoi(v)
	if err != nil || shards < 1 || shards > MaxShards {
		return 0, fmt.Errorf("webhooks: stored shard count %q is not one this version writes", v)
	}
	return shards, nil
}
