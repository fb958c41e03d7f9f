package replay

import (
	"errors"
	"testing"

	"github.com/smartdrop/webhooks/internal/rdb"
	"github.com/smartdrop/webhooks/internal/types"
)

// TestCursorRoundTripsAndRefusesWhatItDidNotIssue: a cursor reads back as written; a string that is
// not four non-negative numbers, names a shard beyond the keyspace or an empty window is refused with
// ErrInvalidCursor.
func TestCursorRoundTripsAndRefusesWhatItDidNotIssue(t *testing.T) {
	c := cursor{shard: 3, from: 10, until: 20, skip: 2}
	got, err := parseCursor(c.String(), 4)
	if err != nil || got != c {
		t.Fatalf("parseCursor(%q) = %+v, %v; want %+v", c.String(), got, err, c)
	}
	for _, s := range []string{"", "1:2:3", "a:1:2:3", "0:-1:2:0", "4:1:2:0", "0:3:2:0", "0:1:2:3:4"} {
		if _, err := parseCursor(s, 4); !errors.Is(err, types.ErrInvalidCursor) {
			t.Errorf("parseCursor(%q) = %v, want ErrInvalidCursor", s, err)
		}
	}
}

// TestCursorAfter: a short page moves to the next shard from since; a full page goes on past its last
// score, skipping the entries of that score it read, and past more of them when the whole page had the
// cursor's score.
func TestCursorAfter(t *testing.T) {
	c := cursor{shard: 1, from: 5, until: 100}
	e := func(scores ...int64) []rdb.ReplayEntry {
		out := make([]rdb.ReplayEntry, len(scores))
		for i, s := range scores {
			out[i] = rdb.ReplayEntry{EventID: "e", Accepted: s}
		}
		return out
	}
	cases := []struct {
		name    string
		entries []rdb.ReplayEntry
		want    cursor
	}{
		{"short page", e(5, 6), cursor{shard: 2, from: 1, until: 100}},
		{"full page", e(5, 7, 7), cursor{shard: 1, from: 7, until: 100, skip: 2}},
		{"one score", e(5, 5, 5), cursor{shard: 1, from: 5, until: 100, skip: 3}},
	}
	for _, tc := range cases {
		if got := c.after(tc.entries, 3, 1); got != tc.want {
			t.Errorf("%s: after = %+v, want %+v", tc.name, got, tc.want)
		}
	}
}
