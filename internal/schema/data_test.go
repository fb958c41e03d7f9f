package schema

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestValidateRefusesWhatNoSchemaCanVouchFor: a member name twice in one object, at any depth, and a
// number longer than MaxNumberLen or with an exponent beyond ±maxExponent are refused with a
// *DataError naming the place, on the fast decoder's path and on encoding/json's (bytes that are
// not UTF-8); issue 43's {"amount":"-1; DROP","amount":5} no longer passes an amount: integer
// schema. Broken by dropping the check of a name seen (the validator keeps the last value: 5 passes).
func TestValidateRefusesWhatNoSchemaCanVouchFor(t *testing.T) {
	t.Parallel()
	s, err := Compile("t", []byte(`{"properties": {"amount": {"type": "integer"}}}`))
	require.NoError(t, err)
	for _, c := range []struct{ name, data, path, words string }{
		{"issue 43", `{"amount":"-1; DROP","amount":5}`, "/", `member name "amount" appears twice`},
		{"deep", `{"a": [1, {"b": {"c": 1, "d": 2, "c": 3}}]}`, "/a/1/b", `member name "c" appears twice`},
		{"deep, not UTF-8", "{\"x\": \"\xff\", \"a\": [1, {\"b\": {\"c\": 1, \"c\": 3}}]}", "/a/1/b", `member name "c" appears twice`},
		{"escaped the same", `{"a": 1, "\u0061": 2}`, "/", `member name "a" appears twice`},
		{"long number", `{"n": [1, ` + strings.Repeat("9", MaxNumberLen+1) + `]}`, "/n/1", "longer than 40 characters"},
		{"large exponent", `{"n": 1e401}`, "/n", "exponent beyond ±400"},
		{"large exponent, not UTF-8", "{\"x\": \"\xff\", \"n\": [2, 1e-401]}", "/n/1", "exponent beyond ±400"},
	} {
		err := s.Validate(context.Background(), []byte(c.data))
		var de *DataError
		require.True(t, errors.As(err, &de), "%s: %v", c.name, err)
		assert.Equal(t, c.path, de.Path, c.name)
		assert.Contains(t, de.Error(), c.words, c.name)
	}
	for _, ok := range []string{`{"amount": 5, "other": {"amount": 6}}`, `[{"a": 1}, {"a": 2}]`, `{"n": 1.7976931348623157e308, "m": 5e-324}`,
		"{\"x\": \"\xff\", \"amount\": 5}"} {
		assert.NoError(t, s.Validate(context.Background(), []byte(ok)), ok)
	}
}

// TestErrorQuotesLittleOfTheData: whatever fails and however large the value, an error quotes at
// most MaxValueBytes of a value of the data and is at most about a kilobyte (issue 43, finding 7: a
// 200 KB string failing its pattern made a 200,136-byte error): a pattern, a format, a member name in
// the path, additionalProperties with many names, propertyNames, enum. Broken by quoting the value
// whole (clippedKind returning k).
func TestErrorQuotesLittleOfTheData(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("4111111111111111", 12_500) // 200,000 bytes
	names := make([]string, 500)
	for i := range names {
		names[i] = `"` + long[:200] + string(rune('a'+i%26)) + strings.Repeat("z", i/26) + `": 1`
	}
	for _, c := range []struct{ name, schema, data string }{
		{"pattern", `{"properties": {"card": {"pattern": "^[0-9]{16}$"}}}`, `{"card": "` + long[:20_000] + `"}`}, // a pattern's check of 200 KB is over the budget
		{"format", `{"properties": {"email": {"format": "email"}}}`, `{"email": "` + long + `"}`},
		{"member name in the path", `{"additionalProperties": {"type": "integer"}}`, `{"` + long + `": "x"}`},
		{"additionalProperties", `{"additionalProperties": false}`, `{` + strings.Join(names, ",") + `}`},
		{"propertyNames", `{"propertyNames": {"maxLength": 3}}`, `{"` + long + `": 1}`},
		{"enum", `{"enum": ["` + long[:20_000] + `", "b"]}`, `"` + long + `"`},
		{"const", `{"const": "` + long[:20_000] + `"}`, `"` + long + `"`},
	} {
		s, err := Compile("t", []byte(c.schema))
		require.NoError(t, err, c.name)
		err = s.Validate(context.Background(), []byte(c.data))
		var failed *Error
		require.True(t, errors.As(err, &failed), "%s: %v", c.name, err)
		text := err.Error()
		assert.LessOrEqual(t, len(text), 1024, "%s: %d bytes", c.name, len(text))
		assert.NotContains(t, text, long[:MaxValueBytes+1], "%s: at most MaxValueBytes of a value: %s", c.name, text)
	}
}

// TestValidateConcurrently: many goroutines validating with one Schema at once get each its own
// verdict (the meter of a compiled copy is one validation's), and no more than maxCopies copies are
// made: 32 goroutines, 4 validations each (20 with WEBHOOKS_LONG_TESTS, as .ci/run sets). Broken by
// sharing one copy (the race detector, and verdicts crossing).
func TestValidateConcurrently(t *testing.T) {
	t.Parallel()
	rounds := 4
	if v := os.Getenv("WEBHOOKS_LONG_TESTS"); v != "" && v != "0" {
		rounds = 20
	}
	s, err := Compile("t", []byte(`{"type": "array", "items": {"type": "integer", "minimum": 0}}`))
	require.NoError(t, err)
	good, bad := []byte("["+strings.Repeat("1,", 500)+"1]"), []byte("["+strings.Repeat("1,", 500)+"-1]")
	var wg sync.WaitGroup
	for g := range 32 {
		wg.Go(func() {
			for range rounds {
				if g%2 == 0 {
					assert.NoError(t, s.Validate(context.Background(), good))
					continue
				}
				var failed *Error
				assert.True(t, errors.As(s.Validate(context.Background(), bad), &failed))
				assert.Equal(t, "/500", failed.Path)
			}
		})
	}
	wg.Wait()
	assert.LessOrEqual(t, s.made.Load(), maxCopies)
	assert.Len(t, s.free, int(s.made.Load()), "every copy returned")
}
