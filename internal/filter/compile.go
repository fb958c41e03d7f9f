package filter

// Reading a filter's JSON within the bounds, and compiling it into a tree of conditions whose
// operands are parsed once.

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

type op uint8

const (
	opAnd op = iota
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

var ops = map[string]op{
	"$and": opAnd, "$or": opOr, "$not": opNot,
	"$eq": opEq, "$neq": opNeq, "$gt": opGt, "$gte": opGte, "$lt": opLt, "$lte": opLte,
	"$in": opIn, "$nin": opNin, "$exist": opExist, "$startsWith": opStartsWith, "$endsWith": opEndsWith,
}

// node is one compiled condition. Two filters that decode to the same JSON compile to equal trees.
type node struct {
	op   op
	path []string // opField: the field path, one key per element
	subs []*node  // opAnd, opOr: the conditions; opNot, opField: the one condition
	arg  *value   // opEq, opNeq, opGt...opLte, opStartsWith, opEndsWith: the operand
	// set holds the operands of opIn and opNin by hash, in the filter's order.
	set map[uint64][]*value
	b   bool // opExist
}

// members is a decoded filter object with its keys in document order.
type members []member

type member struct {
	key string
	val any
}

// reader decodes a filter token by token, refusing it as soon as it goes beyond the depth or node
// bounds, or repeats a key.
type reader struct {
	dec   *json.Decoder
	nodes int
}

func (r *reader) value(depth int) (any, error) {
	tok, err := r.dec.Token()
	if err != nil {
		return nil, errAt("", "is not valid JSON: %v", err)
	}
	if r.nodes++; r.nodes > MaxNodes {
		return nil, errAt("", "has more than %d values", MaxNodes)
	}
	delim, ok := tok.(json.Delim)
	if !ok {
		return tok, nil // string, json.Number, bool or nil
	}
	if depth+1 > MaxDepth {
		return nil, errAt("", "nests deeper than %d levels", MaxDepth)
	}
	switch delim {
	case '{':
		return r.object(depth)
	case '[':
		arr := []any{}
		for r.dec.More() {
			v, err := r.value(depth + 1)
			if err != nil {
				return nil, err
			}
			arr = append(arr, v)
		}
		return arr, r.end()
	}
	return nil, errAt("", "is not valid JSON")
}

func (r *reader) object(depth int) (any, error) {
	obj := members{}
	seen := map[string]bool{}
	for r.dec.More() {
		kt, err := r.dec.Token()
		if err != nil {
			return nil, errAt("", "is not valid JSON: %v", err)
		}
		key, ok := kt.(string)
		if !ok {
			return nil, errAt("", "is not valid JSON")
		}
		if seen[key] {
			return nil, errAt("", "repeats the key %q in one object", key)
		}
		seen[key] = true
		v, err := r.value(depth + 1)
		if err != nil {
			return nil, err
		}
		obj = append(obj, member{key, v})
	}
	return obj, r.end()
}

// end reads the closing delimiter of an object or array.
func (r *reader) end() error {
	if _, err := r.dec.Token(); err != nil {
		return errAt("", "is not valid JSON: %v", err)
	}
	return nil
}

// compileObject compiles a filter object applied to the value at path (path "" and root true for
// the event document).
func compileObject(obj members, path string, root bool) (*node, error) {
	if len(obj) == 0 {
		return nil, errAt(path, "is an empty object: write {\"$eq\": {}} to compare with an empty object")
	}
	sorted := slices.Clone(obj)
	slices.SortFunc(sorted, func(a, b member) int { return strings.Compare(a.key, b.key) })
	conds := make([]*node, 0, len(sorted))
	for _, m := range sorted {
		compile := compileField
		if strings.HasPrefix(m.key, "$") {
			compile = compileOperator
		}
		n, err := compile(m.key, m.val, path, root)
		if err != nil {
			return nil, err
		}
		conds = append(conds, n)
	}
	if len(conds) == 1 {
		return conds[0], nil
	}
	return &node{op: opAnd, subs: conds}, nil
}

func compileField(key string, val any, path string, root bool) (*node, error) {
	segs := strings.Split(key, ".")
	here := joinPath(path, key)
	for _, s := range segs {
		if s == "" {
			return nil, errAt(here, "has an empty path segment")
		}
		if strings.HasPrefix(s, "$") {
			return nil, errAt(here, "has an operator %q inside a path", s)
		}
	}
	if root && segs[0] != "data" && segs[0] != "type" {
		return nil, errAt(here, "names an unknown field %q: the event has only \"type\" and \"data\"", segs[0])
	}
	var sub *node
	if obj, ok := val.(members); ok {
		var err error
		if sub, err = compileObject(obj, here, false); err != nil {
			return nil, err
		}
	} else {
		sub = &node{op: opEq, arg: operand(val)}
	}
	return &node{op: opField, path: segs, subs: []*node{sub}}, nil
}

func compileOperator(key string, val any, path string, root bool) (*node, error) {
	o, ok := ops[key]
	here := joinPath(path, key)
	if !ok {
		return nil, errAt(here, "is an unknown operator %q", key)
	}
	if root && o != opAnd && o != opOr && o != opNot {
		return nil, errAt(here, "compares the whole event: put %s under \"type\" or \"data\"", key)
	}
	switch o {
	case opAnd, opOr:
		return compileList(o, val, here, root)
	case opNot:
		obj, ok := val.(members)
		if !ok {
			return nil, errAt(here, "takes a filter object, got %s", jsonKind(val))
		}
		sub, err := compileObject(obj, here, root)
		if err != nil {
			return nil, err
		}
		return &node{op: opNot, subs: []*node{sub}}, nil
	case opEq, opNeq:
		return &node{op: o, arg: operand(val)}, nil
	case opGt, opGte, opLt, opLte:
		switch val.(type) {
		case json.Number, string:
			return &node{op: o, arg: operand(val)}, nil
		}
		return nil, errAt(here, "takes a number or a string, got %s", jsonKind(val))
	case opIn, opNin:
		arr, ok := val.([]any)
		if !ok {
			return nil, errAt(here, "takes an array, got %s", jsonKind(val))
		}
		n := &node{op: o, set: make(map[uint64][]*value, len(arr))}
		for _, e := range arr {
			x := operand(e)
			n.set[x.hash] = append(n.set[x.hash], x)
		}
		return n, nil
	case opExist:
		b, ok := val.(bool)
		if !ok {
			return nil, errAt(here, "takes true or false, got %s", jsonKind(val))
		}
		return &node{op: o, b: b}, nil
	default: // opStartsWith, opEndsWith
		if _, ok := val.(string); !ok {
			return nil, errAt(here, "takes a string, got %s", jsonKind(val))
		}
		return &node{op: o, arg: operand(val)}, nil
	}
}

// compileList compiles the filters of $and or $or.
func compileList(o op, val any, here string, root bool) (*node, error) {
	arr, ok := val.([]any)
	if !ok || len(arr) == 0 {
		return nil, errAt(here, "takes a non-empty array of filters, got %s", jsonKind(val))
	}
	n := &node{op: o}
	for i, e := range arr {
		ep := fmt.Sprintf("%s[%d]", here, i)
		obj, ok := e.(members)
		if !ok {
			return nil, errAt(ep, "must be a filter object, got %s", jsonKind(e))
		}
		sub, err := compileObject(obj, ep, root)
		if err != nil {
			return nil, err
		}
		n.subs = append(n.subs, sub)
	}
	return n, nil
}

// operand is a filter's operand as a value, parsed once here.
func operand(v any) *value {
	var count int
	x := fromJSON(v, &count)
	return &x
}

func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
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
	case members, map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}
