package eventtypes

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestData: the data of a body as the root encodes it is found after the first `,"data":`, which an
// id or type holding that text cannot imitate (their quotes are escaped); a body without data has none.
func TestData(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ body, data string }{
		{`{"id":"e1","type":"a.b","timestamp":"2026-01-01T00:00:00Z","data":{"x":1}}`, `{"x":1}`},
		{`{"id":"e\",\"data\":2","type":"a.b","timestamp":"2026-01-01T00:00:00Z","data":[1,2]}`, `[1,2]`},
		{`{"id":"e1","type":"a.b","timestamp":"2026-01-01T00:00:00Z","data":null}`, `null`},
	} {
		assert.Equal(t, tc.data, string(Data([]byte(tc.body))), tc.body)
	}
	assert.Nil(t, Data([]byte(`{"id":"e1"}`)))
	assert.Nil(t, Data([]byte(`,"data":`)), "nothing after the marker")
}
