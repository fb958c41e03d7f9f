package worker

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestShareGivesEachItsTurn: free slots go one at a time in turn, each webhook up to its room.
func TestShareGivesEachItsTurn(t *testing.T) {
	assert.Equal(t, []int{1, 3, 2}, Share([]int{1, 5, 2}, 6))
	assert.Equal(t, []int{1, 1, 0}, Share([]int{4, 4, 4}, 2))
	assert.Equal(t, []int{2, 0}, Share([]int{2, 0}, 9), "no more than the rooms hold")
}

// TestTurnsGoRound: with fewer slots than webhooks, a pass starts after the last webhook the previous
// one served, so none is left out pass after pass.
func TestTurnsGoRound(t *testing.T) {
	var turns Turns
	ids := func(ws []Want) []string {
		out := make([]string, len(ws))
		for i, w := range ws {
			out[i] = w.ID
		}
		return out
	}
	wants := func() []Want { return []Want{{ID: "c"}, {ID: "a"}, {ID: "b"}} }
	assert.Equal(t, []string{"a", "b", "c"}, ids(turns.Order(wants(), 3)), "enough slots: by id")
	assert.Equal(t, []string{"a", "b", "c"}, ids(turns.Order(wants(), 2)))
	assert.Equal(t, []string{"c", "a", "b"}, ids(turns.Order(wants(), 2)), "starts after b")
	assert.Equal(t, []string{"b", "c", "a"}, ids(turns.Order(wants(), 1)), "starts after a")
}
