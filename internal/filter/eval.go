package filter

// Evaluating a compiled filter against a Document.

import (
	"bytes"
	"encoding/json"
	"errors"
	"hash/maphash"
	"io"
	"strings"
)

// Document is an event as filters read it, {"type": <type>, "data": <data>}: its data is decoded
// at most once, when the first filter that reads it is matched, and then shared by every filter
// matched against the Document. A Document is not safe for concurrent use.
type Document struct {
	root    value // an object holding "type", and "data" once decoded (when it decodes)
	typ     value
	raw     []byte
	data    value
	decoded bool
	values  int // values decoded, the type included: the event's size as evaluation counts it
	decodes int // times the data was decoded (0 or 1)
}

// NewDocument returns the Document of an event of type eventType whose data is the JSON data.
// It does not decode data.
func NewDocument(eventType string, data []byte) *Document {
	d := &Document{raw: data, values: 1}
	d.typ = value{kind: kindString, s: eventType, hash: mix(hashString, maphash.String(seed, eventType))}
	d.root = value{kind: kindObject, obj: map[string]*value{"type": &d.typ}}
	return d
}

// load decodes the data, once; data that is not one JSON value stays missing.
func (d *Document) load() {
	if d.decoded {
		return
	}
	d.decoded = true
	d.decodes++
	dec := json.NewDecoder(bytes.NewReader(d.raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return
	}
	d.data = fromJSON(v, &d.values)
	d.root.obj["data"] = &d.data
}

// Match reports whether the Document passes the filter. The nil filter matches every Document.
// It never panics, whatever the data.
func (f *Filter) Match(d *Document) bool {
	if f == nil || f.root == nil {
		return true
	}
	e := evaluator{doc: d}
	return e.eval(f.root, &d.root)
}

// evaluator evaluates one filter against one Document, counting its steps: each condition
// evaluated, path segment walked, array element visited and value pair compared is one step.
type evaluator struct {
	doc   *Document
	steps int
}

// eval applies the condition to v; v is nil when missing.
func (e *evaluator) eval(n *node, v *value) bool {
	e.steps++
	switch n.op {
	case opAnd:
		for _, s := range n.subs {
			if !e.eval(s, v) {
				return false
			}
		}
		return true
	case opOr:
		for _, s := range n.subs {
			if e.eval(s, v) {
				return true
			}
		}
		return false
	case opNot:
		return !e.eval(n.subs[0], v)
	case opField:
		return e.eval(n.subs[0], e.walk(v, n.path))
	case opExist:
		return (v != nil) == n.b
	case opNeq:
		return !(v != nil && e.contains(v, n.arg))
	case opNin:
		return !(v != nil && e.in(n, v))
	}
	if v == nil {
		return false
	}
	switch n.op {
	case opEq:
		return e.contains(v, n.arg)
	case opIn:
		return e.in(n, v)
	}
	if v.kind == kindArray {
		for i := range v.arr {
			if e.scalar(n, &v.arr[i]) {
				return true
			}
		}
		return false
	}
	return e.scalar(n, v)
}

// walk returns the value at path under v, or nil when missing.
func (e *evaluator) walk(v *value, path []string) *value {
	for _, seg := range path {
		e.steps++
		if v == &e.doc.root && seg == "data" {
			e.doc.load()
		}
		if v == nil || v.kind != kindObject {
			return nil
		}
		v = v.obj[seg]
	}
	return v
}

// contains reports whether v equals x, or v is an array with an element equal to x.
func (e *evaluator) contains(v, x *value) bool {
	if e.equal(v, x) {
		return true
	}
	if v.kind == kindArray {
		for i := range v.arr {
			if e.equal(&v.arr[i], x) {
				return true
			}
		}
	}
	return false
}

// in reports whether v, or an element of v when it is an array, is one of n's operands: one hash
// lookup per value, whatever the number of operands.
func (e *evaluator) in(n *node, v *value) bool {
	if e.member(n, v) {
		return true
	}
	if v.kind == kindArray {
		for i := range v.arr {
			if e.member(n, &v.arr[i]) {
				return true
			}
		}
	}
	return false
}

func (e *evaluator) member(n *node, v *value) bool {
	e.steps++
	for _, x := range n.set[v.hash] {
		if e.equal(v, x) {
			return true
		}
	}
	return false
}

// equal compares two values: numbers numerically, objects and arrays deeply. Values of different
// hashes differ at once, so a deep comparison runs only between values that are (almost surely)
// equal.
func (e *evaluator) equal(a, b *value) bool {
	e.steps++
	if a.hash != b.hash || a.kind != b.kind {
		return false
	}
	switch a.kind {
	case kindNull:
		return true
	case kindBool:
		return a.b == b.b
	case kindString:
		return a.s == b.s
	case kindNumber:
		if a.n.wild || b.n.wild {
			return a.n.wild && b.n.wild && a.n.digits == b.n.digits
		}
		c, _ := a.n.compare(b.n)
		return c == 0
	case kindArray:
		if len(a.arr) != len(b.arr) {
			return false
		}
		for i := range a.arr {
			if !e.equal(&a.arr[i], &b.arr[i]) {
				return false
			}
		}
		return true
	}
	if len(a.obj) != len(b.obj) {
		return false
	}
	for k, av := range a.obj {
		bv, ok := b.obj[k]
		if !ok || !e.equal(av, bv) {
			return false
		}
	}
	return true
}

// scalar applies an ordering or string operator to one value.
func (e *evaluator) scalar(n *node, v *value) bool {
	e.steps++
	x := n.arg
	if v.kind != x.kind {
		return false
	}
	switch n.op {
	case opStartsWith:
		return strings.HasPrefix(v.s, x.s)
	case opEndsWith:
		return strings.HasSuffix(v.s, x.s)
	}
	var c int
	if v.kind == kindString {
		c = strings.Compare(v.s, x.s)
	} else {
		var ok bool
		if c, ok = v.n.compare(x.n); !ok {
			return false
		}
	}
	switch n.op {
	case opGt:
		return c > 0
	case opGte:
		return c >= 0
	case opLt:
		return c < 0
	}
	return c <= 0 // opLte
}
