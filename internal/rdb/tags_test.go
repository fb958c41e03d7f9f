package rdb

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
)

// bitCRC16 is CRC16 (XMODEM) computed bit by bit: the reference for the table-driven crc16.
func bitCRC16(s string) uint16 {
	var crc uint16
	for k := 0; k < len(s); k++ {
		crc ^= uint16(s[k]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}

// referenceTags is the tag search as the file comment states it, with the bit-by-bit CRC: for shard i,
// the first "P:t<n>" whose slot is the first of the i-th range.
func referenceTags(prefix string, shards int) []string {
	tags := make([]string, shards)
	for i := range shards {
		for n := 0; n < maxTagSearch; n++ {
			c := prefix + ":t" + strconv.Itoa(n)
			if int(bitCRC16(c))%ClusterSlots == RangeStart(i, shards) {
				tags[i] = "{" + c + "}"
				break
			}
		}
	}
	return tags
}

// TestSearchTagsIsTheReference: the streamed, table-driven search picks the same tags as the search
// the file comment states, and crc16 is the bit-by-bit CRC16.
func TestSearchTagsIsTheReference(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"", "a", "123456789", "wht_TestSomething_0a1b2c", "{odd}:prefix\x00\xff"} {
		assert.Equal(t, bitCRC16(s), crc16(s), "%q", s)
	}
	for _, tc := range []struct {
		prefix string
		shards int
	}{{"wh", 1}, {"wh", 3}, {"wht_TestPage_9f8e7d", 8}, {"p", 64}} {
		assert.Equal(t, referenceTags(tc.prefix, tc.shards), searchTags(tc.prefix, tc.shards), "%q, %d shards", tc.prefix, tc.shards)
	}
}
