package schema

// A decoder of event data for schema validation: the values jsonschema.UnmarshalJSON makes
// (map[string]any, []any, string, json.Number, bool, nil) in one pass over the bytes, without
// encoding/json's separate scan, about twice as fast. It reads what encode wrote (valid JSON); on
// anything it does not take it reports an error and the caller falls back to jsonschema.UnmarshalJSON
// (after checkStrict). Both refuse what no schema can vouch for (DataError).

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// errDecode is the fast decoder's refusal: the caller decodes with encoding/json instead.
var errDecode = errors.New("schema: data not decoded by the fast path")

// DataError is data that no schema can vouch for, refused whatever its schema says: an object with
// a member name twice (a receiver may read either value, and the validator sees only the last), or a
// number longer than MaxNumberLen or with an exponent beyond ±maxExponent (its checks would cost the
// validator's big-number arithmetic more than its bound).
type DataError struct {
	Path   string // a JSON pointer into the data (clipped)
	Reason string
	tokens []string // the path, innermost first, while the error rises through the decoder
}

func (e *DataError) Error() string { return "at " + e.Path + ": " + e.Reason }

// within prepends tok to the path of err when it is a *DataError.
func within(err error, tok string) error {
	if de, ok := err.(*DataError); ok {
		de.tokens = append(de.tokens, tok)
	}
	return err
}

// finish sets e.Path from its tokens.
func (e *DataError) finish() *DataError {
	slices.Reverse(e.tokens)
	for i, tok := range e.tokens {
		e.tokens[i] = clip(tok, MaxValueBytes)
	}
	e.Path = clipFront("/"+strings.Join(escapePointer(e.tokens), "/"), maxPathBytes)
	e.tokens = nil
	return e
}

func duplicateName(name string) *DataError {
	return &DataError{Reason: fmt.Sprintf("member name %q appears twice in one object: a receiver may read either value, and the schema checks only one; send each name once",
		clip(name, MaxValueBytes))}
}

func numberTooLong(text string) *DataError {
	return &DataError{Reason: fmt.Sprintf("number %s is longer than %d characters or has an exponent beyond ±%d, more than a schema's checks of it may cost; send it as a string",
		clip(text, MaxValueBytes), MaxNumberLen, maxExponent)}
}

// checkNumber refuses a number (its JSON text) over MaxNumberLen or maxExponent.
func checkNumber(text string) error {
	if len(text) > MaxNumberLen {
		return numberTooLong(text)
	}
	if exponent(text) > maxExponent {
		return numberTooLong(text)
	}
	return nil
}

// exponent is the absolute value of the exponent of a number's JSON text (0 for none), counted up
// to maxExponent+1.
func exponent(text string) int {
	i := strings.IndexAny(text, "eE")
	if i < 0 {
		return 0
	}
	exp := 0
	for _, c := range text[i+1:] {
		if c >= '0' && c <= '9' {
			exp = min(exp*10+int(c-'0'), maxExponent+1)
		}
	}
	return exp
}

// maxDecodeDepth bounds the nesting the fast decoder follows (encoding/json allows 10,000).
const maxDecodeDepth = 1000

// decodeData decodes one JSON value that fills data (whitespace around it allowed). It refuses, with
// a *DataError, a member name twice in one object and a number checkNumber refuses. It also returns
// the depth of the value's nesting (0 for a scalar) and the steps it took (decodeSteps): past
// budget, it stops with errOverBudget.
func decodeData(data []byte, budget int64) (any, int, int64, error) {
	d := dataDecoder{b: data, left: budget - int64(len(data)/16)}
	if d.left < 0 {
		return nil, 0, 0, errOverBudget
	}
	v, err := d.value(0)
	if de, ok := err.(*DataError); ok {
		return nil, 0, 0, de.finish()
	}
	if err != nil {
		return nil, 0, budget - d.left, err
	}
	d.space()
	if d.i != len(d.b) {
		return nil, 0, budget - d.left, errDecode
	}
	return v, d.depth, budget - d.left, nil
}

// DecodeNative decodes one JSON value as encoding/json decodes it into an any with UseNumber, in
// one pass over the bytes, but each number an int64 when it is integral and in range (the text
// strconv.ParseInt takes), else a float64. ok is false for what this path does not take (not JSON,
// a member name twice, bytes that are not UTF-8, a number checkNumber refuses, nesting deeper than
// 1,000): decode those with encoding/json.
func DecodeNative(data []byte) (v any, ok bool) {
	d := dataDecoder{b: data, left: math.MaxInt64, native: true}
	v, err := d.value(0)
	if d.space(); err != nil || d.i != len(d.b) {
		return nil, false
	}
	return v, true
}

// decodeSteps is what decoding a value costs (and a step per 16 bytes of the data).
const decodeSteps = 8

type dataDecoder struct {
	b      []byte
	i      int
	depth  int   // the deepest nesting met
	left   int64 // steps left of the budget
	native bool  // numbers as int64 or float64 (DecodeNative), not json.Number
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
	if d.left -= decodeSteps; d.left < 0 {
		return nil, errOverBudget
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
	d.depth = max(d.depth, depth+1)
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
		if _, dup := m[k]; dup {
			return nil, duplicateName(k)
		}
		v, err := d.value(depth + 1)
		if err != nil {
			return nil, within(err, k)
		}
		m[k] = v
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
	d.depth = max(d.depth, depth+1)
	a := []any{}
	d.space()
	if d.i < len(d.b) && d.b[d.i] == ']' {
		d.i++
		return a, nil
	}
	for {
		v, err := d.value(depth + 1)
		if err != nil {
			return nil, within(err, strconv.Itoa(len(a)))
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
	n := json.Number(d.b[start:j])
	if err := checkNumber(string(n)); err != nil {
		return nil, err
	}
	if d.native {
		if i, err := strconv.ParseInt(string(n), 10, 64); err == nil {
			return i, nil
		}
		f, _ := strconv.ParseFloat(string(n), 64)
		return f, nil
	}
	return n, nil
}
