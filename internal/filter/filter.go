// Package filter is the webhook filter language: Parse checks and compiles a filter once, and
// Match evaluates it against a Document, an event decoded at most once for all the filters matched
// against it.
//
// A filter is a JSON object, the operator set that Outpost and Convoy share, evaluated against the
// event as the document {"type": <event type>, "data": <event data>}.
//
// Paths. A key that does not start with `$` names a field of the value the object applies to (at the
// top level, the event document: only "type" and "data" may be named there). Its value is either an
// object, which is a filter applied to that field (so nested objects walk into the event:
// {"data": {"amount": {"$gt": 10}}}), or any other JSON value, which means {"$eq": value}
// ({"type": "pool.created"}). A key with dots is a path: {"data.amount": {"$gte": 10}} is the same
// condition as the nested form; a field whose own name contains a dot cannot be named. A path walks
// through objects only: a key under an array (or under a string, number, ...) is missing. An empty
// object is refused below the top level (write {"$eq": {}} to compare with one); a top-level {} is no
// filter.
//
// Several keys in one object must all hold (AND), in any mix of fields and operators:
// {"data": {"$exist": true, "amount": {"$gte": 100, "$lt": 500}}}.
//
// Operators, applied to the value the object stands at (v, possibly missing):
//
//   - $eq x: v equals x. Equality is JSON equality: numbers numerically (1, 1.0 and 1e0 are equal),
//     strings byte for byte, objects by their key sets and values, arrays element by element in order;
//     values of different kinds are never equal (1 is not "1", null is not missing).
//   - $neq x: not $eq x (true for a missing v).
//   - $gt, $gte, $lt, $lte x: x is a number or a string; numbers order numerically, strings by
//     bytes (lexicographically). A v of another kind than x (or missing) makes them false.
//   - $in [x...]: $eq holds for some x in the list. $nin [x...]: $in does not hold (true for a
//     missing v, and for an empty list).
//   - $exist b: b is a bool; v is present (null counts as present) exactly when b is true.
//   - $startsWith s, $endsWith s: s is a string; v is a string with that prefix/suffix.
//   - $or [f...], $and [f...]: non-empty arrays of filters (objects) applied to the same v; some/all
//     of them hold.
//   - $not f: f is a filter (an object) applied to v; it does not hold.
//
// Arrays in the event (as in Convoy and Outpost, "the array contains the value"): when v is an array,
// $eq x holds if v as a whole equals x or if any element of v equals x (one level: elements of nested
// arrays are not searched); $gt/$gte/$lt/$lte/$startsWith/$endsWith hold if any element satisfies
// them. The negations are the negations of those: {"tags": {"$neq": "a"}} and
// {"tags": {"$nin": ["a"]}} hold only if no element is "a". $in holds if any listed value is
// contained, so {"tags": {"$in": ["a", "b"]}} matches ["b", "c"].
//
// Numbers compare exactly as decimals, whatever their length: each is parsed once (the filter's at
// Parse, the event's when its data is decoded) into sign, significant digits and exponent, and
// compared by those, with no floating-point rounding and no arbitrary-precision arithmetic. A number
// whose decimal exponent is beyond ±2^40 equals only the same literal and orders with nothing.
//
// The event's data is decoded once per Document; data that is not one JSON value leaves "data"
// missing. Keys of filter objects must be unique, and the filter must be valid UTF-8.
//
// Cost. Matching one filter against a Document takes O(conditions × (values in the event + path
// length)) steps: a condition visits the value at its path and, for an array, each element once,
// and $in finds an element among its operands by hash, whatever the number of operands.
package filter

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"
)

// Bounds on a filter; a filter beyond any of them is refused.
const (
	// MaxBytes is the largest filter, in bytes of JSON.
	MaxBytes = 8 << 10
	// MaxDepth is the deepest nesting of objects and arrays in a filter (the filter object itself is
	// depth 1).
	MaxDepth = 16
	// MaxNodes is the most JSON values a filter may hold, counting every object, array, string,
	// number, bool and null, operands included.
	MaxNodes = 256
)

// Filter is a compiled filter. The nil *Filter matches every event.
type Filter struct {
	root *node
}

// Parse checks and compiles a filter. A nil, empty or whitespace-only filter, `null` and `{}` are no
// filter: it returns nil, which matches every event. A filter that is not acceptable (not a JSON
// object, beyond the bounds, an unknown operator, an operand of the wrong type, ...) is refused with
// an error that names where in the filter the problem is.
func Parse(raw []byte) (*Filter, error) {
	if len(raw) > MaxBytes {
		return nil, errAt("", "is %d bytes; at most %d are allowed", len(raw), MaxBytes)
	}
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, nil
	}
	if !utf8.Valid(raw) {
		return nil, errAt("", "is not valid UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	r := reader{dec: dec}
	doc, err := r.value(0)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errAt("", "has data after the JSON value")
	}
	if doc == nil {
		return nil, nil
	}
	obj, ok := doc.(members)
	if !ok {
		return nil, errAt("", "must be a JSON object, got %s", jsonKind(doc))
	}
	if len(obj) == 0 {
		return nil, nil
	}
	root, err := compileObject(obj, "", true)
	if err != nil {
		return nil, err
	}
	return &Filter{root: root}, nil
}

func errAt(path, format string, args ...any) error {
	where := "filter"
	if path != "" {
		where = "filter at " + path
	}
	return fmt.Errorf("%s %s", where, fmt.Sprintf(format, args...))
}
