package webhooks

import (
	"fmt"
	"maps"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseRecord(t *testing.T) {
	base := map[string]string{"w": "wh_1", "e": "ev", "t": "a.b", "s": "failed", "n": "12", "r": "3",
		"next": "1700000000000", "code": "500", "err": "HTTP 500", "c": "1", "u": "2", "x": "3", "l": "tok+"}
	for k := 1; k <= 12; k++ {
		if k > 2 { // the oldest were dropped by the outcome script
			base[fmt.Sprint("h", k)] = fmt.Sprintf(`{"t":%d,"d":1000,"c":500}`, k)
		}
	}
	rec, err := parseRecord("dlv_x", maps.All(base))
	require.NoError(t, err)
	assert.Equal(t, 12, rec.Attempts)
	assert.Equal(t, "tok", rec.lease)
	assert.True(t, rec.NextAttemptAt.IsZero(), "a failed delivery has no next attempt")
	require.Len(t, rec.History, maxHistory)
	for i, a := range rec.History {
		assert.Equal(t, int64(3+i), a.At.UnixMilli(), "oldest first")
	}
	flat := []any{}
	for k, v := range base {
		flat = append(flat, k, v)
	}
	fromFlat, err := parseRecord("dlv_x", flatFields(flat))
	require.NoError(t, err)
	assert.Equal(t, rec, fromFlat, "a flat reply decodes like a map")

	for name, change := range map[string][2]string{
		"no webhook":       {"w", ""},
		"unknown status":   {"s", "weird"},
		"attempts not int": {"n", "many"},
	} {
		t.Run(name, func(t *testing.T) {
			bad := maps.Clone(base)
			bad[change[0]] = change[1]
			_, err := parseRecord("dlv_x", maps.All(bad))
			require.ErrorIs(t, err, ErrCorruptRecord)
		})
	}
}
