package schema

// A decoder of event data for schema validation: the values jsonschema.UnmarshalJSON makes
// (map[string]any, []any, string, json.Number, bool, nil) in one pass over the bytes, without
// encoding/json's separate scan, about twice as fast. It reads what encode wrote (valid JSON); on
// anything it does not take it reports an error and the caller falls back to jsonschema.UnmarshalJSON.

import (
	"encoding/json"
	"errors"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// errDecode is the fast decoder's refusal: the caller decodes with encoding/json instead.
var errDecode = errors.New("schema: data not decoded by the fast path")

// maxDecodeDepth bounds the nesting the fast decoder follows (encoding/json allows 10,000).
const maxDecodeDepth = 1000

// decodeData decodes one JSON value that fills data (whitespace around it allowed).
func decodeData(data []byte) (any, error) {
	d := dataDecoder{b: data}
	v, err := d.value(0)
	if err != nil {
		return nil, err
	}
	d.space()
	if d.i != len(d.b) {
		return nil, errDecode
	}
	return v, nil
}

type dataDecoder struct {
	b []byte
	i int
}

func (d *dataDecoder) space() {
	for d.i < len(d.b) {
		switch d.b[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

func (d *dataDecoder) value(depth int) (any, error) {
	d.space()
	if d.i >= len(d.b) || depth > maxDecodeDepth {
		return nil, errDecode
	}
	switch c := d.b[d.i]; {
	case c == '{':
		return d.object(depth)
	case c == '[':
		return d.array(depth)
	case c == '"':
		return d.str()
	case c == 't':
		return true, d.literal("true")
	case c == 'f':
		return false, d.literal("false")
	case c == 'n':
		return nil, d.literal("null")
	case c == '-' || c >= '0' && c <= '9':
		return d.number()
	}
	return nil, errDecode
}

func (d *dataDecoder) literal(word string) error {
	if len(d.b)-d.i < len(word) || string(d.b[d.i:d.i+len(word)]) != word {
		return errDecode
	}
	d.i += len(word)
	return nil
}

func (d *dataDecoder) object(depth int) (any, error) {
	d.i++ // {
	m := map[string]any{}
	d.space()
	if d.i < len(d.b) && d.b[d.i] == '}' {
		d.i++
		return m, nil
	}
	for {
		d.space()
		if d.i >= len(d.b) || d.b[d.i] != '"' {
			return nil, errDecode
		}
		k, err := d.str()
		if err != nil {
			return nil, err
		}
		d.space()
		if d.i >= len(d.b) || d.b[d.i] != ':' {
			return nil, errDecode
		}
		d.i++
		v, err := d.value(depth + 1)
		if err != nil {
			return nil, err
		}
		m[k] = v // a repeated name keeps the last value, as encoding/json does
		d.space()
		if d.i >= len(d.b) {
			return nil, errDecode
		}
		switch d.b[d.i] {
		case ',':
			d.i++
		case '}':
			d.i++
			return m, nil
		default:
			return nil, errDecode
		}
	}
}

func (d *dataDecoder) array(depth int) (any, error) {
	d.i++ // [
	a := []any{}
	d.space()
	if d.i < len(d.b) && d.b[d.i] == ']' {
		d.i++
		return a, nil
	}
	for {
		v, err := d.value(depth + 1)
		if err != nil {
			return nil, err
		}
		a = append(a, v)
		d.space()
		if d.i >= len(d.b) {
			return nil, errDecode
		}
		switch d.b[d.i] {
		case ',':
			d.i++
		case ']':
			d.i++
			return a, nil
		default:
			return nil, errDecode
		}
	}
}

// str reads a string; one with escapes or bytes that are not valid UTF-8 is handed to strconv.Unquote
// only for the escapes it shares with JSON, else refused.
func (d *dataDecoder) str() (string, error) {
	start := d.i + 1
	for j := start; j < len(d.b); j++ {
		switch c := d.b[j]; {
		case c == '"':
			s := d.b[start:j]
			if !utf8.Valid(s) {
				return "", errDecode // encoding/json replaces invalid bytes: leave it to it
			}
			d.i = j + 1
			return string(s), nil
		case c == '\\':
			return d.escaped(start)
		case c < 0x20:
			return "", errDecode
		}
	}
	return "", errDecode
}

// escaped reads a string holding escapes, from its first byte at start.
func (d *dataDecoder) escaped(start int) (string, error) {
	out := make([]byte, 0, 32)
	j := start
	for j < len(d.b) {
		c := d.b[j]
		switch {
		case c == '"':
			if !utf8.Valid(out) {
				return "", errDecode
			}
			d.i = j + 1
			return string(out), nil
		case c < 0x20:
			return "", errDecode
		case c != '\\':
			out = append(out, c)
			j++
			continue
		}
		if j+1 >= len(d.b) {
			return "", errDecode
		}
		switch e := d.b[j+1]; e {
		case '"', '\\', '/':
			out = append(out, e)
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, n := d.hex4(j + 2)
			if n < 0 {
				return "", errDecode
			}
			j += 6
			if utf16.IsSurrogate(r) {
				r2 := rune(-1)
				if j+1 < len(d.b) && d.b[j] == '\\' && d.b[j+1] == 'u' {
					if r2, n = d.hex4(j + 2); n < 0 {
						return "", errDecode
					}
				}
				if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
					r = dec
					j += 6
				} else {
					r = utf8.RuneError // a lone surrogate: U+FFFD, as encoding/json
				}
			}
			out = utf8.AppendRune(out, r)
			continue
		default:
			return "", errDecode
		}
		j += 2
	}
	return "", errDecode
}

// hex4 reads 4 hex digits at i (n -1 when they are not).
func (d *dataDecoder) hex4(i int) (rune, int) {
	if i+4 > len(d.b) {
		return 0, -1
	}
	v, err := strconv.ParseUint(string(d.b[i:i+4]), 16, 32)
	if err != nil {
		return 0, -1
	}
	return rune(v), 4
}

// number reads a JSON number as json.Number (its text), checking its grammar.
func (d *dataDecoder) number() (any, error) {
	start := d.i
	j := d.i
	if d.b[j] == '-' {
		j++
	}
	digits := func() int {
		k := j
		for j < len(d.b) && d.b[j] >= '0' && d.b[j] <= '9' {
			j++
		}
		return j - k
	}
	if j < len(d.b) && d.b[j] == '0' {
		j++
	} else if digits() == 0 {
		return nil, errDecode
	}
	if j < len(d.b) && d.b[j] == '.' {
		j++
		if digits() == 0 {
			return nil, errDecode
		}
	}
	if j < len(d.b) && (d.b[j] == 'e' || d.b[j] == 'E') {
		j++
		if j < len(d.b) && (d.b[j] == '+' || d.b[j] == '-') {
			j++
		}
		if digits() == 0 {
			return nil, errDecode
		}
	}
	d.i = j
	return json.Number(d.b[start:j]), nil
}
