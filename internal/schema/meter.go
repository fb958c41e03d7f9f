package schema

// The meter: the validator (santhosh-tekuri/jsonschema) has no bound of its own, and a schema of a
// few lines can make it apply 2^20 subschemas, or a recursive one 2^depth, to one value. So every
// subschema of a compiled schema runs a hook as the validator applies it to a value (the `format`
// keyword, which Compile sets on every subschema to a format of its own, wrapping the schema's own
// format), before the validator looks at anything within the value. The hook charges the work that
// visit is about to do, in steps: the visit itself, each member or element it walks and the entry of
// each subschema it applies to them (prepaid, since a subschema that fails on a value's type returns
// before its own hook), the bytes its checks scan. A validation whose steps pass MaxSteps, or whose
// context ends, fails every hook from then on: the validator then applies nothing more, and returns
// at once through the visits already paid for.

import (
	"context"
	"encoding/json"
	"errors"
	"regexp/syntax"
)

// Steps: one is about 10 ns of the validator's work on this project's 2-core test machine (the
// worst cases of worst_test.go measure it: BenchmarkValidateWorst reports ns/step).
const (
	visitSteps    = 32 // a subschema applied to a value: its validator, the type check, the error it may make
	memberSteps   = 3  // the validator's walk over one member of an object it visits
	numberSteps   = 12 // a check of a number: this, plus its text's length and a quarter of its exponent
	ctxCheckSteps = 1 << 14
	// Strings: steps per 16 bytes of a string, per check that scans it.
	lengthSteps16  = 2   // minLength, maxLength, contentEncoding, contentMediaType
	formatSteps16  = 8   // a format (date-time, email, uri, …)
	regexSteps16   = 256 // format regex, which compiles the string
	patternSteps16 = 32  // pattern: per instruction of its program (Go's regexp: at worst about 19 ns per instruction and byte)
)

var (
	errOverBudget = errors.New("schema: validation over its budget")
	errCanceled   = errors.New("schema: validation canceled")
)

// cost is what a subschema's hook charges for a visit, by the kind of value.
type cost struct {
	base     int64 // every visit: the entries of what it applies in place, its required names
	string   int64 // a string: steps per 16 bytes
	number   int64 // a number: the numeric checks it makes, and those of what it applies in place before their hooks
	member   int64 // an object: per member
	keyBytes int64 // an object: per 16 bytes of member names (patternProperties)
	item     int64 // an array: per element
	unique   bool  // an array: uniqueItems hashes it whole
	// memberNumber and itemNumber: per number that is a member or element, the checks of it made
	// before the hooks of what applies to it (type integer, const, enum).
	memberNumber, itemNumber int64
	// perInPlace: an object or array, when unevaluated* is in the schema: per member or element, and
	// per member or element of theirs (the validator copies their names).
	perInPlace int64
}

// price sets every node's entry and cost.
func (sh *shape) price() {
	done := make([]bool, len(sh.nodes))
	var entry func(n *node) int64
	entry = func(n *node) int64 {
		if done[n.id] {
			return n.entry
		}
		done[n.id] = true
		n.entry = visitSteps + int64(sh.chain)/8 // the validator's cycle check walks the in-place path
		if n.obj != nil {
			n.entry += literalSteps(n.obj["const"])
			n.numberPre += literalNumbers(n.obj["const"])
			if enum, ok := n.obj["enum"].([]any); ok {
				for _, v := range enum {
					n.entry += 1 + literalSteps(v)
					n.numberPre += literalNumbers(v)
				}
			}
			if hasType(n.obj["type"], "integer") {
				n.numberPre++
			}
			if n.refOnly && n.ref != nil {
				n.entry += entry(n.ref) // no hook of its own: its target's entry is paid with it
				n.numberPre += n.ref.numberPre
			}
		}
		return n.entry
	}
	for _, n := range sh.nodes {
		entry(n)
	}
	for _, n := range sh.nodes {
		if n.obj == nil {
			continue
		}
		c := &n.cost
		c.base = 1
		for _, s := range n.inPlace {
			c.base += s.entry
			c.number += s.numberPre
		}
		c.base += int64(len(asArray(n.obj["required"])))
		if m, ok := n.obj["dependentRequired"].(map[string]any); ok {
			for _, names := range m {
				c.base += int64(len(asArray(names)))
			}
		}
		if p, ok := n.obj["pattern"].(string); ok {
			c.string += patternSteps(p)
		}
		switch n.format {
		case "":
		case "regex":
			c.string += regexSteps16
		default:
			c.string += formatSteps16
		}
		for _, kw := range []string{"minLength", "maxLength", "contentEncoding", "contentMediaType"} {
			if _, ok := n.obj[kw]; ok {
				c.string += lengthSteps16
			}
		}
		if n.content != nil {
			c.base += n.content.entry
		}
		for _, kw := range []string{"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"} {
			if _, ok := n.obj[kw]; ok {
				c.number++
			}
		}
		c.member, c.memberNumber = applied(n.member, n.props) // one property applies to a member
		c.member += memberSteps                               // the validator walks every member of an object it visits
		for _, p := range n.patterns {
			c.keyBytes += patternSteps(p)
		}
		c.item, c.itemNumber = applied(n.item, n.alts) // one of prefixItems, items, additionalItems applies to an element
		c.unique, _ = n.obj["uniqueItems"].(bool)
		if sh.uneval {
			c.perInPlace = 1 + int64(len(n.inPlace))
		}
	}
}

// applied is the entries, and the checks of a number before their hooks, of what may apply to one
// member or element: of which only one of the first alts applies (the costliest is counted), and
// all the others.
func applied(list []*node, alts int) (entry, numbers int64) {
	var costliest, costliestNumbers int64
	for i, s := range list {
		if i < alts {
			costliest, costliestNumbers = max(costliest, s.entry), max(costliestNumbers, s.numberPre)
			continue
		}
		entry += s.entry
		numbers += s.numberPre
	}
	return entry + costliest, numbers + costliestNumbers
}

// charge is what a visit of n to v costs.
func (c *cost) charge(v any) int64 {
	steps := c.base
	switch v := v.(type) {
	case string:
		if c.string > 0 {
			steps += c.string * int64(len(v)/16+1)
		}
	case json.Number:
		steps += c.number * numberCost(v)
	case map[string]any:
		steps += int64(len(v)) * (c.member + c.perInPlace)
		if c.keyBytes > 0 || c.perInPlace > 0 || c.memberNumber > 0 {
			for k, e := range v {
				steps += c.keyBytes*int64(len(k)/16+1) + c.perInPlace*int64(containerLen(e))
				if n, ok := e.(json.Number); ok {
					steps += c.memberNumber * numberCost(n)
				}
			}
		}
	case []any:
		steps += int64(len(v)) * (c.item + c.perInPlace)
		if c.perInPlace > 0 || c.itemNumber > 0 {
			for _, e := range v {
				steps += c.perInPlace * int64(containerLen(e))
				if n, ok := e.(json.Number); ok {
					steps += c.itemNumber * numberCost(n)
				}
			}
		}
		if c.unique {
			steps += valueSteps(v)
		}
	}
	return steps
}

// containerLen is the number of members or elements of v (0 for a scalar).
func containerLen(v any) int {
	switch v := v.(type) {
	case map[string]any:
		return len(v)
	case []any:
		return len(v)
	}
	return 0
}

// meter is one validation's budget.
type meter struct {
	ctx      context.Context
	left     int64
	scale    int64 // each charge is multiplied by it (the validation that builds errors: validate)
	sinceCtx int64
	err      error // errOverBudget or errCanceled once spent
}

// visit is the hook of a subschema with cost c: it charges the visit and runs the subschema's own
// format check (own, nil for none).
func (m *meter) visit(c *cost, own func(any) error, v any) error {
	if m.err != nil {
		return m.err
	}
	steps := c.charge(v) * m.scale
	if steps > m.left {
		m.err = errOverBudget // the visit is not made: m.left is what was spent
		return m.err
	}
	m.left -= steps
	m.sinceCtx += steps
	if m.sinceCtx >= ctxCheckSteps {
		m.sinceCtx = 0
		if m.ctx.Err() != nil {
			m.err = errCanceled
			return m.err
		}
	}
	if own != nil {
		return own(v)
	}
	return nil
}

// numberCost is the steps of one check of a number written as text (MaxNumberLen bounds it).
func numberCost(text json.Number) int64 {
	return numberSteps + int64(len(text)) + int64(exponent(string(text)))/4
}

// literalSteps is the cost of comparing a value of the data with v (const, enum) but for its
// numbers (literalNumbers count those): valueSteps with a step per number.
func literalSteps(v any) int64 {
	if v == nil {
		return 0
	}
	return sizeSteps(v, func(json.Number) int64 { return 1 })
}

// literalNumbers counts the numbers in v: comparing a number of the data with each is a check of it.
func literalNumbers(v any) int64 {
	switch v := v.(type) {
	case json.Number, float64:
		return 1
	case []any:
		n := int64(0)
		for _, e := range v {
			n += literalNumbers(e)
		}
		return n
	case map[string]any:
		n := int64(0)
		for _, e := range v {
			n += literalNumbers(e)
		}
		return n
	}
	return 0
}

// hasType reports whether the type keyword's value t names name.
func hasType(t any, name string) bool {
	switch t := t.(type) {
	case string:
		return t == name
	case []any:
		for _, e := range t {
			if e == name {
				return true
			}
		}
	}
	return false
}

// valueSteps is the cost of hashing v (uniqueItems): sizeSteps with numberCost per number.
func valueSteps(v any) int64 { return sizeSteps(v, numberCost) }

// sizeSteps is the size of v in steps: a step per value, a step per 16 bytes of its strings and
// member names, number(n) per number n.
func sizeSteps(v any, number func(json.Number) int64) int64 {
	switch v := v.(type) {
	case string:
		return 1 + int64(len(v)/16)
	case json.Number:
		return number(v)
	case []any:
		n := int64(1)
		for _, e := range v {
			n += sizeSteps(e, number)
		}
		return n
	case map[string]any:
		n := int64(1)
		for k, e := range v {
			n += 1 + int64(len(k)/16) + sizeSteps(e, number)
		}
		return n
	}
	return 1
}

// patternSteps is the per-16-bytes cost of matching a regular expression: Go's regexp runs in time
// linear in the input, times (at worst) the size of its compiled program.
func patternSteps(p string) int64 {
	re, err := syntax.Parse(p, syntax.Perl)
	if err != nil {
		return patternSteps16 // the validator refuses it when it compiles
	}
	prog, err := syntax.Compile(re.Simplify())
	if err != nil {
		return patternSteps16
	}
	return patternSteps16 * int64(len(prog.Inst))
}

func asArray(v any) []any { a, _ := v.([]any); return a }
