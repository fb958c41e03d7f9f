package pgxoutbox

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
)

// TestLastErrorIsBounded: a row's last_error is at most MaxLastErrorBytes whatever the error's length
// (issue 43: a 100 KB last_error), cut on a character boundary, and a short error is kept whole.
// Broken by storing err.Error() as it is.
func TestLastErrorIsBounded(t *testing.T) {
	long := errors.New(strings.Repeat("é", 60_000))
	got := lastError(long)
	assert.LessOrEqual(t, len(got), MaxLastErrorBytes)
	assert.True(t, utf8.ValidString(got), "cut on a character boundary")
	assert.True(t, strings.HasSuffix(got, "…"), "the cut is marked")
	assert.Equal(t, "short", lastError(errors.New("short")))
}
