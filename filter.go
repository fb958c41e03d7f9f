package webhooks

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"unicode/utf8"
)

// Bounds on a webhook's filter; a filter beyond any of them is refused.
const (
	// maxFilterBytes is the largest filter, in bytes of JSON.
	maxFilterBytes = 8 << 10
	// maxFilterDepth is the deepest nesting of objects and arrays in a filter (the filter object itself
	// is depth 1).
	maxFilterDepth = 16
	// maxFilterNodes is the most JSON values a filter may hold, counting every object, array, string,
	// number, bool and null, operands included.
	maxFilterNodes = 256
	// filterNumberPrec is the precision, in bits, numbers are compared with.
	filterNumberPrec = 1024
)

// eventFilter is a webhook's compiled filter: parsed and checked once (parseFilter) at Create/Update,
// kept with the stored webhook and evaluated against every event the webhook's subscriptions select.
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
// Numbers are compared exactly as integers when both fit in 64 bits, otherwise as binary floating
// point numbers of 1024 bits (so decimal numbers of up to about 300 significant digits compare
// exactly). A number whose exponent is beyond that format (around 1e646456992) equals only the same
// literal and orders with nothing.
//
// The event's data is decoded with UseNumber; data that is not one JSON value leaves "data"
// missing. Keys of filter objects must be unique, and the filter must be valid UTF-8.
type eventFilter struct {
	root *filterNode
	// usesData records whether any condition reads "data", so match decodes it only then.
	usesData bool
}

type filterOp uint8

const (
	opAnd filterOp = iota
	opOr
	opNot
	opField
	opEq
	opNeq
	opGt
	opGte
	opLt
	opLte
	opIn
	opNin
	opExist
	opStartsWith
	opEndsWith
)

var filterOps = map[string]filterOp{
	"$and": opAnd, "$or": opOr, "$not": opNot,
	"$eq": opEq, "$neq": opNeq, "$gt": opGt, "$gte": opGte, "$lt": opLt, "$lte": opLte,
	"$in": opIn, "$nin": opNin, "$exist": opExist, "$startsWith": opStartsWith, "$endsWith": opEndsWith,
}

// filterNode is one compiled condition. Operands keep their decoded JSON form (json.Number for
// numbers), so two filters that decode to the same JSON compile to equal trees.
type filterNode struct {
	op   filterOp
	path []string      // opField: the field path, one key per element
	subs []*filterNode // opAnd, opOr: the conditions; opNot, opField: the one condition
	arg  any           // opEq, opNeq, opGt...opLte, opStartsWith, opEndsWith: the operand
	list []any         // opIn, opNin
	b    bool          // opExist
}

// parseFilter checks and compiles a webhook's filter. A nil, empty or whitespace-only filter, `null`
// and `{}` are no filter: it returns nil, which matches every event. A filter that is not acceptable
// (not a JSON object, beyond the bounds, an unknown operator, an operand of the wrong type, ...) is
// refused with an error wrapping ErrInvalidWebhook that names where in the filter the problem is.
func parseFilter(raw json.RawMessage) (*eventFilter, error) {
	if len(raw) > maxFilterBytes {
		return nil, filterErr("", "is %d bytes; at most %d are allowed", len(raw), maxFilterBytes)
	}
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, nil
	}
	if !utf8.Valid(raw) {
		return nil, filterErr("", "is not valid UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	r := filterReader{dec: dec}
	doc, err := r.value(0)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, filterErr("", "has data after the JSON value")
	}
	if doc == nil {
		return nil, nil
	}
	obj, ok := doc.(filterObject)
	if !ok {
		return nil, filterErr("", "must be a JSON object, got %s", jsonKind(doc))
	}
	if len(obj) == 0 {
		return nil, nil
	}
	c := filterCompiler{}
	root, err := c.object(obj, "", true)
	if err != nil {
		return nil, err
	}
	return &eventFilter{root: root, usesData: c.usesData}, nil
}

func filterErr(path, format string, args ...any) error {
	where := "filter"
	if path != "" {
		where = "filter at " + path
	}
	return fmt.Errorf("%w: %s %s", ErrInvalidWebhook, where, fmt.Sprintf(format, args...))
}

// filterObject is a decoded filter object with its keys in document order.
type filterObject []filterMember

type filterMember struct {
	key string
	val any
}

// filterReader decodes a filter token by token, refusing it as soon as it goes beyond the depth or
// node bounds, or repeats a key.
type filterReader struct {
	dec   *json.Decoder
	nodes int
}

func (r *filterReader) value(depth int) (any, error) {
	tok, err := r.dec.Token()
	if err != nil {
		return nil, filterErr("", "is not valid JSON: %v", err)
	}
	r.nodes++
	if r.nodes > maxFilterNodes {
		return nil, filterErr("", "has more than %d values", maxFilterNodes)
	}
	delim, ok := tok.(json.Delim)
	if !ok {
		return tok, nil // string, json.Number, bool or nil
	}
	if depth+1 > maxFilterDepth {
		return nil, filterErr("", "nests deeper than %d levels", maxFilterDepth)
	}
	switch delim {
	case '{':
		obj := filterObject{}
		seen := map[string]bool{}
		for r.dec.More() {
			kt, err := r.dec.Token()
			if err != nil {
				return nil, filterErr("", "is not valid JSON: %v", err)
			}
			key, ok := kt.(string)
			if !ok {
				return nil, filterErr("", "is not valid JSON")
			}
			if seen[key] {
				return nil, filterErr("", "repeats the key %q in one object", key)
			}
			seen[key] = true
			v, err := r.value(depth + 1)
			if err != nil {
				return nil, err
			}
			obj = append(obj, filterMember{key, v})
		}
		if _, err := r.dec.Token(); err != nil {
			return nil, filterErr("", "is not valid JSON: %v", err)
		}
		return obj, nil
	case '[':
		arr := []any{}
		for r.dec.More() {
			v, err := r.value(depth + 1)
			if err != nil {
				return nil, err
			}
			arr = append(arr, v)
		}
		if _, err := r.dec.Token(); err != nil {
			return nil, filterErr("", "is not valid JSON: %v", err)
		}
		return arr, nil
	}
	return nil, filterErr("", "is not valid JSON")
}

type filterCompiler struct {
	usesData bool
}

// object compiles a filter object applied to the value at path (path "" and root true for the
// event document).
func (c *filterCompiler) object(obj filterObject, path string, root bool) (*filterNode, error) {
	if len(obj) == 0 {
		return nil, filterErr(path, "is an empty object: write {\"$eq\": {}} to compare with an empty object")
	}
	members := slices.Clone(obj)
	slices.SortFunc(members, func(a, b filterMember) int { return strings.Compare(a.key, b.key) })
	conds := make([]*filterNode, 0, len(members))
	for _, m := range members {
		var n *filterNode
		var err error
		if strings.HasPrefix(m.key, "$") {
			n, err = c.operator(m.key, m.val, path, root)
		} else {
			n, err = c.field(m.key, m.val, path, root)
		}
		if err != nil {
			return nil, err
		}
		conds = append(conds, n)
	}
	if len(conds) == 1 {
		return conds[0], nil
	}
	return &filterNode{op: opAnd, subs: conds}, nil
}

func (c *filterCompiler) field(key string, val any, path string, root bool) (*filterNode, error) {
	segs := strings.Split(key, ".")
	here := joinFilterPath(path, key)
	for _, s := range segs {
		if s == "" {
			return nil, filterErr(here, "has an empty path segment")
		}
		if strings.HasPrefix(s, "$") {
			return nil, filterErr(here, "has an operator %q inside a path", s)
		}
	}
	if root {
		switch segs[0] {
		case "data":
			c.usesData = true
		case "type":
		default:
			return nil, filterErr(here, "names an unknown field %q: the event has only \"type\" and \"data\"", segs[0])
		}
	}
	var sub *filterNode
	if obj, ok := val.(filterObject); ok {
		var err error
		if sub, err = c.object(obj, here, false); err != nil {
			return nil, err
		}
	} else {
		sub = &filterNode{op: opEq, arg: plainJSON(val)}
	}
	return &filterNode{op: opField, path: segs, subs: []*filterNode{sub}}, nil
}

func (c *filterCompiler) operator(key string, val any, path string, root bool) (*filterNode, error) {
	op, ok := filterOps[key]
	here := joinFilterPath(path, key)
	if !ok {
		return nil, filterErr(here, "is an unknown operator %q", key)
	}
	if root && op != opAnd && op != opOr && op != opNot {
		return nil, filterErr(here, "compares the whole event: put %s under \"type\" or \"data\"", key)
	}
	switch op {
	case opAnd, opOr:
		arr, ok := val.([]any)
		if !ok || len(arr) == 0 {
			return nil, filterErr(here, "takes a non-empty array of filters, got %s", jsonKind(val))
		}
		n := &filterNode{op: op}
		for i, e := range arr {
			ep := fmt.Sprintf("%s[%d]", here, i)
			obj, ok := e.(filterObject)
			if !ok {
				return nil, filterErr(ep, "must be a filter object, got %s", jsonKind(e))
			}
			sub, err := c.object(obj, ep, root)
			if err != nil {
				return nil, err
			}
			n.subs = append(n.subs, sub)
		}
		return n, nil
	case opNot:
		obj, ok := val.(filterObject)
		if !ok {
			return nil, filterErr(here, "takes a filter object, got %s", jsonKind(val))
		}
		sub, err := c.object(obj, here, root)
		if err != nil {
			return nil, err
		}
		return &filterNode{op: opNot, subs: []*filterNode{sub}}, nil
	case opEq, opNeq:
		return &filterNode{op: op, arg: plainJSON(val)}, nil
	case opGt, opGte, opLt, opLte:
		switch val.(type) {
		case json.Number, string:
			return &filterNode{op: op, arg: val}, nil
		}
		return nil, filterErr(here, "takes a number or a string, got %s", jsonKind(val))
	case opIn, opNin:
		arr, ok := val.([]any)
		if !ok {
			return nil, filterErr(here, "takes an array, got %s", jsonKind(val))
		}
		list := make([]any, len(arr))
		for i, e := range arr {
			list[i] = plainJSON(e)
		}
		return &filterNode{op: op, list: list}, nil
	case opExist:
		b, ok := val.(bool)
		if !ok {
			return nil, filterErr(here, "takes true or false, got %s", jsonKind(val))
		}
		return &filterNode{op: op, b: b}, nil
	default: // opStartsWith, opEndsWith
		s, ok := val.(string)
		if !ok {
			return nil, filterErr(here, "takes a string, got %s", jsonKind(val))
		}
		return &filterNode{op: op, arg: s}, nil
	}
}

func joinFilterPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// plainJSON turns a decoded filter value into the form encoding/json decodes to (objects as
// map[string]any), for comparison with the event's values.
func plainJSON(v any) any {
	switch v := v.(type) {
	case filterObject:
		m := make(map[string]any, len(v))
		for _, e := range v {
			m[e.key] = plainJSON(e.val)
		}
		return m
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = plainJSON(e)
		}
		return out
	}
	return v
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a bool"
	case json.Number:
		return "a number"
	case string:
		return "a string"
	case []any:
		return "an array"
	case filterObject, map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}
