package types

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDurationsInJSONAreMilliseconds: the API's durations are numbers with their unit in their name
// (open_for_ms, duration_ms), never nanoseconds, and read back as written.
func TestDurationsInJSONAreMilliseconds(t *testing.T) {
	t.Parallel()
	h := Health{WebhookID: "wh_1", State: CircuitOpen, ConsecutiveFailures: 5, OpenFor: 32 * time.Second}
	b, err := json.Marshal(h)
	require.NoError(t, err)
	assert.JSONEq(t, `{"webhook_id":"wh_1","state":"open","consecutive_failures":5,"open_for_ms":32000}`, string(b))
	var back Health
	require.NoError(t, json.Unmarshal(b, &back))
	assert.Equal(t, h, back)

	a := Attempt{At: time.Date(2026, 12, 4, 1, 2, 3, 0, time.UTC), Duration: 1502 * time.Microsecond, StatusCode: 200}
	b, err = json.Marshal(a)
	require.NoError(t, err)
	assert.JSONEq(t, `{"at":"2026-12-04T01:02:03Z","duration_ms":1.502,"status_code":200}`, string(b))
	var backA Attempt
	require.NoError(t, json.Unmarshal(b, &backA))
	assert.Equal(t, a, backA)

	b, err = json.Marshal(Delivery{ID: "dlv_1", History: []Attempt{a}})
	require.NoError(t, err)
	assert.Contains(t, string(b), `"duration_ms":1.502`, "inside a delivery too")
	assert.NotContains(t, string(b), `"duration":`)
}
