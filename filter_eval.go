package webhooks

// Evaluating a compiled event filter (filter.go parses and compiles it).

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math/big"
	"strconv"
	"strings"
)

// match reports whether the event (its type and its JSON data) passes the filter. A nil filter
// matches every event. It never panics, whatever the data.
func (f *eventFilter) match(eventType string, data json.RawMessage) bool {
	if f == nil || f.root == nil {
		return true
	}
	doc := map[string]any{"type": eventType}
	if f.usesData {
		if v, ok := decodeFilterData(data); ok {
			doc["data"] = v
		}
	}
	return f.root.eval(doc, true)
}

func decodeFilterData(data json.RawMessage) (any, bool) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, false
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, false
	}
	return v, true
}

// eval applies the condition to v; present is false when v is missing.
func (n *filterNode) eval(v any, present bool) bool {
	switch n.op {
	case opAnd:
		for _, s := range n.subs {
			if !s.eval(v, present) {
				return false
			}
		}
		return true
	case opOr:
		for _, s := range n.subs {
			if s.eval(v, present) {
				return true
			}
		}
		return false
	case opNot:
		return !n.subs[0].eval(v, present)
	case opField:
		for _, seg := range n.path {
			m, ok := v.(map[string]any)
			if !ok {
				v, present = nil, false
				break
			}
			v, present = m[seg]
		}
		return n.subs[0].eval(v, present)
	case opExist:
		return present == n.b
	case opNeq:
		return !(present && containsEqual(v, n.arg))
	case opNin:
		return !(present && n.in(v))
	}
	if !present {
		return false
	}
	switch n.op {
	case opEq:
		return containsEqual(v, n.arg)
	case opIn:
		return n.in(v)
	}
	if arr, ok := v.([]any); ok {
		for _, e := range arr {
			if n.scalar(e) {
				return true
			}
		}
		return false
	}
	return n.scalar(v)
}

func (n *filterNode) in(v any) bool {
	for _, x := range n.list {
		if containsEqual(v, x) {
			return true
		}
	}
	return false
}

// scalar applies an ordering or string operator to one value.
func (n *filterNode) scalar(v any) bool {
	switch n.op {
	case opStartsWith, opEndsWith:
		s, ok := v.(string)
		if !ok {
			return false
		}
		if n.op == opStartsWith {
			return strings.HasPrefix(s, n.arg.(string))
		}
		return strings.HasSuffix(s, n.arg.(string))
	}
	c, ok := compareJSON(v, n.arg)
	if !ok {
		return false
	}
	switch n.op {
	case opGt:
		return c > 0
	case opGte:
		return c >= 0
	case opLt:
		return c < 0
	case opLte:
		return c <= 0
	}
	return false
}

// containsEqual reports whether v equals x, or v is an array with an element equal to x.
func containsEqual(v, x any) bool {
	if jsonEqual(v, x) {
		return true
	}
	if arr, ok := v.([]any); ok {
		for _, e := range arr {
			if jsonEqual(e, x) {
				return true
			}
		}
	}
	return false
}

// jsonEqual compares two decoded JSON values: numbers numerically, objects and arrays deeply.
func jsonEqual(a, b any) bool {
	switch a := a.(type) {
	case nil:
		return b == nil
	case bool:
		bb, ok := b.(bool)
		return ok && a == bb
	case string:
		bs, ok := b.(string)
		return ok && a == bs
	case json.Number:
		bn, ok := b.(json.Number)
		if !ok {
			return false
		}
		if a == bn {
			return true
		}
		c, ok := compareNumbers(a, bn)
		return ok && c == 0
	case []any:
		ba, ok := b.([]any)
		if !ok || len(a) != len(ba) {
			return false
		}
		for i := range a {
			if !jsonEqual(a[i], ba[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		bm, ok := b.(map[string]any)
		if !ok || len(a) != len(bm) {
			return false
		}
		for k, av := range a {
			bv, ok := bm[k]
			if !ok || !jsonEqual(av, bv) {
				return false
			}
		}
		return true
	}
	return false
}

// compareJSON orders two numbers or two strings; ok is false for any other pair.
func compareJSON(a, b any) (int, bool) {
	switch a := a.(type) {
	case json.Number:
		if bn, ok := b.(json.Number); ok {
			return compareNumbers(a, bn)
		}
	case string:
		if bs, ok := b.(string); ok {
			return strings.Compare(a, bs), true
		}
	}
	return 0, false
}

// compareNumbers orders two JSON numbers: exactly as int64 when both are such integers, otherwise as
// 1024-bit floating point numbers; ok is false when either is beyond that format.
func compareNumbers(a, b json.Number) (int, bool) {
	ai, aerr := strconv.ParseInt(string(a), 10, 64)
	bi, berr := strconv.ParseInt(string(b), 10, 64)
	if aerr == nil && berr == nil {
		switch {
		case ai < bi:
			return -1, true
		case ai > bi:
			return 1, true
		}
		return 0, true
	}
	af, _, err := big.ParseFloat(string(a), 10, filterNumberPrec, big.ToNearestEven)
	if err != nil {
		return 0, false
	}
	bf, _, err := big.ParseFloat(string(b), 10, filterNumberPrec, big.ToNearestEven)
	if err != nil {
		return 0, false
	}
	return af.Cmp(bf), true
}
