package schema

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// decodeSeeds are JSON texts of every kind, and texts that are not JSON.
var decodeSeeds = []string{
	`null`, `true`, `false`, `0`, `-0`, `12`, `-3.5e+10`, `1E-2`, `1.0`, `123456789012345678901234567890`,
	`""`, `"plain"`, `"esc \" \\ \/ \b \f \n \r \t"`, `"\u00e9\u4e2d"`, `"\ud83d\ude00"`, `"\ud83d"`, `"\ud83dx"`, `"\udc00\ud83d"`,
	`"héllo"`, "\"bad \xff byte\"", `[]`, `{}`, ` [1, "a", {"b": [null, true]}] `, `{"a": 1, "a": 2}`,
	`{"k": {"k": {"k": []}}}`, `[1,]`, `{"a" 1}`, `{"a":}`, `01`, `1.`, `.5`, `-`, `1e`, `tru`, `"open`, `"ctl` + "\x01" + `"`,
	`[1] 2`, `{"a":1`, `"\x"`, `"\u12"`, `"\u12g4"`, strings.Repeat("[", 2000) + strings.Repeat("]", 2000),
}

// TestDecodeDataAgreesWithTheValidatorsDecoder: on every seed the fast decoder either refuses (the
// caller then uses jsonschema.UnmarshalJSON) or decodes exactly what jsonschema.UnmarshalJSON does;
// on what encoding/json writes it never refuses. Broken by any divergence (a number as float64, an
// escape decoded differently, trailing data accepted).
func TestDecodeDataAgreesWithTheValidatorsDecoder(t *testing.T) {
	t.Parallel()
	for _, s := range decodeSeeds {
		checkDecode(t, []byte(s))
	}
	for _, v := range []any{map[string]any{"a": []any{1.5, "x\u2028y<>&", nil, true}, "é": map[string]any{}}, "\U0001F600 \x7f", -0.0, 1e300} {
		b, err := json.Marshal(v)
		require.NoError(t, err)
		_, _, _, err = decodeData(b, MaxSteps)
		assert.NoError(t, err, "%s: what encoding/json writes is taken", b)
		checkDecode(t, b)
	}
}

func checkDecode(t *testing.T, b []byte) {
	t.Helper()
	got, _, _, err := decodeData(b, MaxSteps)
	if err != nil {
		return // refused: the caller falls back to the validator's decoder
	}
	want, werr := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	require.NoError(t, werr, "%q: the fast decoder took what the validator's refuses", b)
	assert.Equal(t, want, got, "%q", b)
}

func FuzzDecodeData(f *testing.F) {
	for _, s := range decodeSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) { checkDecode(t, b) })
}
