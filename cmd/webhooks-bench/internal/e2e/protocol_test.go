package e2e

import (
	"bufio"
	"bytes"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestProtocolRoundTrip(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	sent := []Message{
		{Ready: PhaseFresh},
		{Report: &PhaseReport{ElapsedNS: 5, OK: 20000, Deferred: 3, Received: 20000, CPUNS: 7, Cmds: 9, Trips: 2}},
		{Done: &Done{LoneTrips: [2]float64{2, 1}, Sampled: 20}},
	}
	for _, m := range sent {
		require.NoError(t, Send(&buf, m))
	}
	require.NoError(t, Send(&buf, Message{Error: "redis down"}))
	in := bufio.NewScanner(&buf)
	for _, want := range sent {
		got, err := Next(in)
		require.NoError(t, err)
		assert.Equal(t, want, got)
	}
	_, err := Next(in)
	assert.ErrorContains(t, err, "redis down", "a child's error message is an error")
	_, err = Next(in)
	assert.ErrorIs(t, err, io.ErrUnexpectedEOF, "a child that exits early is an error")
}
