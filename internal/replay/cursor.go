package replay

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/smartdrop/webhooks/internal/rdb"
	"github.com/smartdrop/webhooks/internal/types"
)

// cursor is where a replay goes on: in a shard's index, the entries scored in [from, until] after the
// first skip of them.
type cursor struct {
	shard       int
	from, until int64 // accepted, ms
	skip        int64
}

// after is the cursor past entries read from c, asked for count of them; a shard read to its end
// moves the cursor to the next shard, from since (ms).
func (c cursor) after(entries []rdb.ReplayEntry, count, since int64) cursor {
	if int64(len(entries)) < count {
		return cursor{shard: c.shard + 1, from: since, until: c.until}
	}
	last := entries[len(entries)-1].Accepted
	if last == c.from {
		c.skip += int64(len(entries))
		return c
	}
	c.from, c.skip = last, 0
	for _, e := range entries {
		if e.Accepted == last {
			c.skip++
		}
	}
	return c
}

// String is the cursor as ReplayPage.Next: "shard:from:until:skip".
func (c cursor) String() string {
	return fmt.Sprintf("%d:%d:%d:%d", c.shard, c.from, c.until, c.skip)
}

// parseCursor reads a ReplayPage.Next of a keyspace of shards.
func parseCursor(s string, shards int) (cursor, error) {
	parts := strings.Split(s, ":")
	var v [4]int64
	err := errors.New("not four numbers")
	if len(parts) == 4 {
		for i, p := range parts {
			if v[i], err = strconv.ParseInt(p, 10, 64); err != nil || v[i] < 0 {
				err = errors.New("not four numbers")
				break
			}
		}
	}
	if err == nil && (v[0] >= int64(shards) || v[1] > v[2]) {
		err = errors.New("out of range")
	}
	if err != nil {
		return cursor{}, fmt.Errorf("%w: replay cursor %q: %v", types.ErrInvalidCursor, s, err)
	}
	return cursor{shard: int(v[0]), from: v[1], until: v[2], skip: v[3]}, nil
}
