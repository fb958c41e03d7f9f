package breaker

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// encode is the stored form of c, as the scripts write it.
func (c circuit) encode() string {
	fails := make([]string, len(c.fails))
	for i, f := range c.fails {
		fails[i] = strconv.FormatInt(f, 10)
	}
	return fmt.Sprintf("%d:%d:%d:%d:%d:%d:%d:%s:%s", c.failures, c.since, c.openUntil, c.openFor, c.probeUntil,
		c.lastOK, c.lastFailed, strings.Join(fails, ","), c.token)
}

// FuzzCircuitDecode: decoding never panics; what it accepts re-encodes to the same circuit; every circuit
// of valid fields round-trips through encode and decode.
func FuzzCircuitDecode(f *testing.F) {
	for _, s := range []string{"", "0:0:0:0:0:0:0::", "3:1767225600000:1767225630000:30000:0:1767225500000:1767225600000:1767225600000,1767225600001:",
		"1:2:3:4:5:6:7:8:tok:en", "1:2:3:4:5", "-1:0:0:0:0:0:0::", "9999999999999999:0:0:0:0:0:0::", "1:0:0:0:0:0:0:5,,6:"} {
		f.Add(s, int64(3), int64(1767225600000), int64(1767225630000), int64(30000), int64(0), "tok")
	}
	f.Fuzz(func(t *testing.T, s string, a, b, c, d, e int64, token string) {
		if got, ok := decodeCircuit(s); ok {
			again, ok := decodeCircuit(got.encode())
			require.True(t, ok, "%q", s)
			require.Equal(t, got, again)
		} else {
			require.Equal(t, circuit{}, got)
		}
		field := func(n int64) int64 { return max(n, -n, 0) % 1_000_000_000_000_000 }
		want := circuit{failures: field(a), since: field(b), openUntil: field(c), openFor: field(d), probeUntil: field(e),
			lastOK: field(e + a), lastFailed: field(b - c), fails: []int64{field(d), field(a)}, token: token}
		got, ok := decodeCircuit(want.encode())
		require.True(t, ok, "%q", want.encode())
		require.Equal(t, want, got)
	})
}
