package transform

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// referenceDecode is what decodeData must give: encoding/json's decoding into an any with UseNumber,
// then numbers.
func referenceDecode(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return numbers(v), nil
}

var decodeCases = []string{
	`{"id":"in_1","amount":4200,"rate":0.5,"big":9223372036854775808,"neg":-12,"exp":1e3,"zero":-0,"huge":1e400}`,
	`{"s":"a\"b\\c\u00e9\ud83d\ude00\n","u":"héllo ✓","dup":1,"dup":2,"nested":{"l":[1,[2,[3,{}]],[]]}}`,
	" \t\n{ \"a\" : [ true , false , null ] , \"b\" : { } }\r\n",
	`[1,"two",3.0,{"four":4}]`, `"just a string"`, `42`, `-1.5E-3`, `null`, `true`,
	"{\"bad utf8\":\"\xff\xfe\"}", `{"a":1}garbage`, `{"a":`, `{"a" 1}`, `[1,]`, ``, `{"a":01}`,
}

// TestDecodeDataAsEncodingJSON: decodeData gives what encoding/json gives, and refuses what it refuses.
func TestDecodeDataAsEncodingJSON(t *testing.T) {
	t.Parallel()
	for _, c := range decodeCases {
		requireDecodesAsReference(t, []byte(c))
	}
}

func requireDecodesAsReference(t *testing.T, data []byte) {
	t.Helper()
	got, err := decodeData(data)
	want, wantErr := referenceDecode(data)
	if wantErr != nil {
		require.Error(t, err, "%q", data)
		return
	}
	require.NoError(t, err, "%q", data)
	assert.Equal(t, want, got, "%q", data)
}

// FuzzDecodeData: on any input, decodeData never panics and agrees with encoding/json.
func FuzzDecodeData(f *testing.F) {
	for _, c := range decodeCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		requireDecodesAsReference(t, data)
	})
}
