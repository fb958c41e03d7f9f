package filter

// Values as filters compare them: each JSON value decoded once, its numbers in a canonical decimal
// form and with a structural hash, so that equality and set membership cost O(1) per value and no
// comparison parses a number again.

import (
	"encoding/json"
	"hash/maphash"
	"strings"
)

type kind uint8

const (
	kindNull kind = iota
	kindBool
	kindNumber
	kindString
	kindArray
	kindObject
)

// value is one decoded JSON value.
type value struct {
	kind kind
	b    bool              // kindBool
	s    string            // kindString
	n    number            // kindNumber
	arr  []value           // kindArray
	obj  map[string]*value // kindObject
	// hash is equal for equal values (objects whatever their key order, numbers whatever their
	// spelling); two values of different hashes are never equal.
	hash uint64
}

// seed keys the hashes, so that no input can be crafted to collide.
var seed = maphash.MakeSeed()

// maxExponent bounds the decimal exponent of a number; beyond it a number is out of range (see
// number.wild).
const maxExponent = 1 << 40

// number is a JSON number as 0.digits × 10^exp with sign neg: digits has no leading or trailing
// zero, and is "" for zero (which is never negative). Two numbers are equal exactly when their
// (neg, digits, exp) are, and order by sign, then exponent, then digits as strings.
type number struct {
	neg    bool
	digits string
	exp    int64
	// wild is set for a number whose exponent is beyond ±maxExponent: it orders with nothing and
	// equals only the same literal, kept in digits.
	wild bool
}

// parseNumber parses a JSON number literal (as encoding/json validated it) once, in time linear in
// its length, with no arbitrary-precision arithmetic.
func parseNumber(lit string) number {
	var n number
	s := lit
	if strings.HasPrefix(s, "-") {
		n.neg, s = true, s[1:]
	}
	mant, exp := s, ""
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		mant, exp = s[:i], s[i+1:]
	}
	intPart, frac, _ := strings.Cut(mant, ".")
	e, ok := parseExponent(exp)
	if !ok {
		return number{digits: lit, wild: true}
	}
	point := int64(len(intPart))
	digits := intPart
	if frac != "" {
		digits = intPart + frac
	}
	trimmed := strings.TrimLeft(digits, "0")
	point -= int64(len(digits) - len(trimmed))
	n.digits = strings.TrimRight(trimmed, "0")
	if n.digits == "" {
		return number{}
	}
	n.exp = point + e
	return n
}

// parseExponent parses an exponent ("", "7", "+7", "-7"); ok is false beyond ±maxExponent.
func parseExponent(s string) (int64, bool) {
	neg := false
	switch {
	case strings.HasPrefix(s, "-"):
		neg, s = true, s[1:]
	case strings.HasPrefix(s, "+"):
		s = s[1:]
	}
	s = strings.TrimLeft(s, "0")
	var e int64
	for _, c := range []byte(s) {
		if e = e*10 + int64(c-'0'); e > maxExponent {
			return 0, false
		}
	}
	if neg {
		e = -e
	}
	return e, true
}

func (n number) sign() int {
	switch {
	case n.digits == "":
		return 0
	case n.neg:
		return -1
	}
	return 1
}

// compare orders a and b; ok is false when either is wild.
func (a number) compare(b number) (int, bool) {
	if a.wild || b.wild {
		return 0, false
	}
	sa, sb := a.sign(), b.sign()
	switch {
	case sa != sb:
		return cmpInt(int64(sa), int64(sb)), true
	case sa == 0:
		return 0, true
	}
	c := cmpInt(a.exp, b.exp)
	if c == 0 {
		c = strings.Compare(a.digits, b.digits)
	}
	return c * sa, true
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Hash kinds, mixed into every hash so that values of different kinds differ.
const (
	hashNull   = 0x6a09e667f3bcc908
	hashFalse  = 0xbb67ae8584caa73b
	hashTrue   = 0x3c6ef372fe94f82b
	hashNumber = 0xa54ff53a5f1d36f1
	hashString = 0x510e527fade682d1
	hashArray  = 0x9b05688c2b3e6c1f
	hashObject = 0x1f83d9abfb41bd6b
	hashWild   = 0x5be0cd19137e2179
)

// mix combines h with x (splitmix64's finaliser over their sum).
func mix(h, x uint64) uint64 {
	z := h + x + 0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

func (n number) hash() uint64 {
	if n.wild {
		return mix(hashWild, maphash.String(seed, n.digits))
	}
	h := mix(hashNumber, maphash.String(seed, n.digits))
	h = mix(h, uint64(n.exp))
	if n.neg {
		h = mix(h, 1)
	}
	return h
}

// fromJSON converts a decoded JSON value (encoding/json's forms with UseNumber, or the filter
// reader's) into a value; count is incremented for every value made.
func fromJSON(v any, count *int) value {
	*count++
	switch v := v.(type) {
	case bool:
		if v {
			return value{kind: kindBool, b: true, hash: hashTrue}
		}
		return value{kind: kindBool, hash: hashFalse}
	case json.Number:
		n := parseNumber(string(v))
		return value{kind: kindNumber, n: n, hash: n.hash()}
	case string:
		return value{kind: kindString, s: v, hash: mix(hashString, maphash.String(seed, v))}
	case []any:
		out := value{kind: kindArray, arr: make([]value, len(v)), hash: hashArray}
		for i, e := range v {
			out.arr[i] = fromJSON(e, count)
			out.hash = mix(out.hash, out.arr[i].hash)
		}
		return out
	case map[string]any:
		out := value{kind: kindObject, obj: make(map[string]*value, len(v))}
		var sum uint64
		for k, e := range v {
			ev := fromJSON(e, count)
			out.obj[k] = &ev
			sum += mix(maphash.String(seed, k), ev.hash) // a sum: key order does not matter
		}
		out.hash = mix(hashObject, sum)
		return out
	case members:
		m := make(map[string]any, len(v))
		for _, e := range v {
			m[e.key] = e.val
		}
		*count--
		return fromJSON(m, count)
	}
	return value{kind: kindNull, hash: hashNull}
}
