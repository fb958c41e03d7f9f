package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestRoundOrderRotatesTheRowsAndKeepsTheScenariosLast(t *testing.T) {
	t.Parallel()
	systems := []system{{name: "a"}, {name: "b"}, {name: "c"}, {name: sysEngine}}
	names := func(ss []system) []string {
		var n []string
		for _, s := range ss {
			n = append(n, s.name)
		}
		return n
	}
	tests := []struct {
		round  int
		rotate bool
		want   []string
	}{
		{1, true, []string{"a", "b", "c", sysEngine}},
		{2, true, []string{"b", "c", "a", sysEngine}},
		{3, true, []string{"c", "a", "b", sysEngine}},
		{4, true, []string{"a", "b", "c", sysEngine}},
		{2, false, []string{"a", "b", "c", sysEngine}},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, names(roundOrder(systems, tt.round, tt.rotate)), "round %d, rotate %t", tt.round, tt.rotate)
	}
	assert.Equal(t, []string{"a", "b", "c", sysEngine}, names(systems), "the systems themselves are not reordered")
}
