package schema

// The shape of a schema, read from its decoded document before it is compiled: every subschema (a
// node), what each applies to which value, and where each $ref leads. It refuses what the bounds of
// limits.go and the rules of references refuse, and gives every subschema the static costs the meter
// charges (meter.go).

import (
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// node is one subschema: an object or a boolean where a keyword takes a schema.
type node struct {
	ptr string         // its JSON pointer in the document ("" for the whole schema)
	obj map[string]any // nil: a boolean schema
	id  int            // its index in shape.nodes

	ref      *node   // where its $ref leads
	inPlace  []*node // what it applies to the value it is applied to, $ref included
	member   []*node // what it may apply to a member of an object: its properties first (one of them applies), then patternProperties, additionalProperties, unevaluatedProperties, propertyNames
	props    int     // how many of member are properties
	patterns []string
	item     []*node // what it may apply to an element of an array: prefixItems, items and additionalItems first (one of them applies), then contains, unevaluatedItems
	alts     int     // how many of item are prefixItems, items and additionalItems
	content  *node   // contentSchema

	format    string // the schema's own format ("" for none), which its meter hook runs
	refOnly   bool   // a $ref whose siblings its draft ignores: the validator runs no hook of it
	expansion int    // subschemas applied to one value through it (saturates above MaxExpansion)
	chain     int    // the longest path of in-place applications from it
	entry     int64  // steps of a visit that its own hook does not charge (meter.go)
	numberPre int64  // checks of a number it makes before its hook (type integer, const, enum)
	cost      cost   // what its hook charges
}

// shape is a schema's document read as subschemas.
type shape struct {
	draft  int // 4, 6, 7, 2019 or 2020
	nodes  []*node
	byPtr  map[string]*node
	refs   []*node // nodes with a $ref, in document order
	uneval bool    // some subschema has unevaluatedProperties or unevaluatedItems
	chain  int     // the longest path of in-place applications in the schema
}

// Keywords whose value is a schema, an array of schemas, or an object of schemas. Drafts differ in
// which they know; all are read in every draft, which can only count a subschema more.
var (
	schemaKeywords = []string{"not", "if", "then", "else", "items", "additionalItems", "additionalProperties",
		"contains", "propertyNames", "unevaluatedItems", "unevaluatedProperties", "contentSchema"}
	schemaArrayKeywords = []string{"allOf", "anyOf", "oneOf", "prefixItems", "items"}
	schemaMapKeywords   = []string{"properties", "patternProperties", "$defs", "definitions", "dependentSchemas", "dependencies"}
)

// draftOf is the draft the validator reads doc in: the one its $schema names, else 2020-12.
func draftOf(doc any) int {
	obj, _ := doc.(map[string]any)
	s, _ := obj["$schema"].(string)
	for _, d := range []struct {
		mark  string
		draft int
	}{{"draft-04", 4}, {"draft-06", 6}, {"draft-07", 7}, {"2019-09", 2019}} {
		if strings.Contains(s, d.mark) {
			return d.draft
		}
	}
	return 2020
}

// readShape reads doc (a decoded schema). The error says what to change.
func readShape(doc any) (*shape, error) {
	sh := &shape{draft: draftOf(doc), byPtr: map[string]*node{}}
	if _, err := sh.walk(doc, ""); err != nil {
		return nil, err
	}
	for _, n := range sh.refs {
		if err := sh.resolve(n); err != nil {
			return nil, err
		}
	}
	for _, n := range sh.nodes {
		sh.link(n)
	}
	state := make([]byte, len(sh.nodes)) // 0 not seen, 1 on the path, 2 done
	for _, n := range sh.nodes {
		if err := sh.expand(n, state); err != nil {
			return nil, err
		}
		sh.chain = max(sh.chain, n.chain)
	}
	for _, n := range sh.nodes {
		// Named: the subschema where the count passes the bound (none of what it applies does).
		if n.expansion > MaxExpansion && !slices.ContainsFunc(n.inPlace, func(c *node) bool { return c.expansion > MaxExpansion }) {
			return nil, fmt.Errorf("schema applies more than %d subschemas to one value at %s (through $ref, allOf, anyOf, oneOf, not, if/then/else, dependentSchemas): refer to each definition fewer times, or nest fewer of them",
				MaxExpansion, pointerText(n.ptr))
		}
	}
	sh.price()
	return sh, nil
}

// walk reads the subschema v at ptr and every subschema within it.
func (sh *shape) walk(v any, ptr string) (*node, error) {
	obj, isObj := v.(map[string]any)
	if _, isBool := v.(bool); !isObj && !isBool {
		return nil, nil // not a schema: the validator refuses it when it compiles
	}
	if len(sh.nodes) == MaxSubschemas {
		return nil, fmt.Errorf("schema has more than %d subschemas: shorten it", MaxSubschemas)
	}
	n := &node{ptr: ptr, obj: obj, id: len(sh.nodes)}
	sh.nodes = append(sh.nodes, n)
	sh.byPtr[ptr] = n
	if obj == nil {
		return n, nil
	}
	idKeyword := "$id"
	if sh.draft == 4 {
		idKeyword = "id"
	}
	if _, ok := obj[idKeyword]; ok && ptr != "" {
		return nil, fmt.Errorf("schema has %s at %s: it is allowed only at the top of the schema (a subschema with its own %s changes what its references mean); remove it",
			idKeyword, pointerText(ptr), idKeyword)
	}
	for _, kw := range []string{"$dynamicRef", "$recursiveRef"} {
		if _, ok := obj[kw]; ok {
			return nil, fmt.Errorf("schema has %s at %s: it is not supported; use $ref with a pointer such as \"#/$defs/name\"", kw, pointerText(ptr))
		}
	}
	if _, ok := obj["$ref"]; ok {
		sh.refs = append(sh.refs, n)
		n.refOnly = sh.draft < 2019
	}
	if f, ok := obj["format"].(string); ok {
		n.format = f
	}
	if _, ok := obj["unevaluatedProperties"]; ok {
		sh.uneval = true
	}
	if _, ok := obj["unevaluatedItems"]; ok {
		sh.uneval = true
	}
	for _, kw := range sortedKeys(obj) {
		if slices.Contains(schemaKeywords, kw) {
			if _, err := sh.walk(obj[kw], ptr+"/"+escapeToken(kw)); err != nil {
				return nil, err
			}
		}
		if arr, ok := obj[kw].([]any); ok && slices.Contains(schemaArrayKeywords, kw) {
			for i, sub := range arr {
				if _, err := sh.walk(sub, ptr+"/"+kw+"/"+strconv.Itoa(i)); err != nil {
					return nil, err
				}
			}
		}
		if m, ok := obj[kw].(map[string]any); ok && slices.Contains(schemaMapKeywords, kw) {
			for _, name := range sortedKeys(m) {
				if _, err := sh.walk(m[name], ptr+"/"+escapeToken(kw)+"/"+escapeToken(name)); err != nil {
					return nil, err
				}
			}
		}
	}
	return n, nil
}

// resolve finds where n's $ref leads: only a JSON pointer to a subschema of this schema is taken.
func (sh *shape) resolve(n *node) error {
	at := pointerText(n.ptr)
	ref, ok := n.obj["$ref"].(string)
	switch {
	case !ok:
		return nil // not a string: the validator refuses it when it compiles
	case ref == "#":
		return fmt.Errorf("schema has $ref \"#\" at %s: a reference to the whole schema is not supported; move the schema under $defs and refer to it as \"#/$defs/name\"", at)
	case strings.HasPrefix(ref, "#") && !strings.HasPrefix(ref, "#/"):
		return fmt.Errorf("schema has $ref %q at %s: a reference to an anchor is not supported; use a JSON pointer such as \"#/$defs/name\"", clip(ref, MaxValueBytes), at)
	case !strings.HasPrefix(ref, "#/"):
		return fmt.Errorf("schema has $ref %q at %s: %w: use a JSON pointer into this schema such as \"#/$defs/name\", with the referenced schema under $defs",
			clip(ref, MaxValueBytes), at, ErrRemoteRef)
	}
	frag, err := url.PathUnescape(ref[1:])
	if err != nil {
		return fmt.Errorf("schema has $ref %q at %s: it is not a valid URI fragment: %v", clip(ref, MaxValueBytes), at, err)
	}
	tokens := strings.Split(frag[1:], "/")
	for i, tok := range tokens {
		tokens[i] = escapeToken(strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~"))
	}
	if n.ref = sh.byPtr["/"+strings.Join(tokens, "/")]; n.ref == nil {
		return fmt.Errorf("schema has $ref %q at %s: it points at no subschema of this schema; point it at one, such as \"#/$defs/name\"", clip(ref, MaxValueBytes), at)
	}
	return nil
}

// link lists what n applies to a value, to its members and to its elements.
func (sh *shape) link(n *node) {
	if n.obj == nil {
		return
	}
	at := func(path ...string) *node {
		p := n.ptr
		for _, tok := range path {
			p += "/" + escapeToken(tok)
		}
		return sh.byPtr[p]
	}
	if n.ref != nil {
		n.inPlace = append(n.inPlace, n.ref)
	}
	if n.refOnly {
		return // its draft ignores every other keyword of a $ref's object
	}
	for _, kw := range []string{"not", "if", "then", "else"} {
		n.inPlace = appendNode(n.inPlace, at(kw))
	}
	for _, kw := range []string{"allOf", "anyOf", "oneOf"} {
		arr, _ := n.obj[kw].([]any)
		for i := range arr {
			n.inPlace = appendNode(n.inPlace, at(kw, strconv.Itoa(i)))
		}
	}
	for _, kw := range []string{"dependentSchemas", "dependencies"} {
		m, _ := n.obj[kw].(map[string]any)
		for _, name := range sortedKeys(m) {
			n.inPlace = appendNode(n.inPlace, at(kw, name))
		}
	}
	var props []*node
	if m, ok := n.obj["properties"].(map[string]any); ok {
		for _, name := range sortedKeys(m) {
			props = appendNode(props, at("properties", name))
		}
	}
	n.member, n.props = props, len(props)
	if m, ok := n.obj["patternProperties"].(map[string]any); ok {
		for _, p := range sortedKeys(m) {
			if s := at("patternProperties", p); s != nil {
				n.member = append(n.member, s)
				n.patterns = append(n.patterns, p)
			}
		}
	}
	for _, kw := range []string{"additionalProperties", "unevaluatedProperties", "propertyNames"} {
		n.member = appendNode(n.member, at(kw))
	}
	var items []*node
	if arr, ok := n.obj["prefixItems"].([]any); ok {
		for i := range arr {
			items = appendNode(items, at("prefixItems", strconv.Itoa(i)))
		}
	}
	if arr, ok := n.obj["items"].([]any); ok {
		for i := range arr {
			items = appendNode(items, at("items", strconv.Itoa(i)))
		}
	} else {
		items = appendNode(items, at("items"))
	}
	items = appendNode(items, at("additionalItems"))
	n.item, n.alts = items, len(items)
	for _, kw := range []string{"contains", "unevaluatedItems"} {
		n.item = appendNode(n.item, at(kw))
	}
	n.content = at("contentSchema")
}

// expand computes n.expansion and n.chain, refusing a cycle of in-place applications (a $ref that
// leads back to where it is without descending into the data: every value would fail it).
func (sh *shape) expand(n *node, state []byte) error {
	switch state[n.id] {
	case 1:
		return fmt.Errorf("schema refers to itself at %s without descending into the data (a $ref cycle through $ref, allOf, anyOf, oneOf, not, if/then/else): no value could pass it; break the cycle",
			pointerText(n.ptr))
	case 2:
		return nil
	}
	state[n.id] = 1
	n.expansion, n.chain = 1, 1
	for _, c := range n.inPlace {
		if err := sh.expand(c, state); err != nil {
			return err
		}
		n.expansion = min(n.expansion+c.expansion, MaxExpansion+1)
		n.chain = max(n.chain, c.chain+1)
	}
	state[n.id] = 2
	return nil
}

func appendNode(list []*node, n *node) []*node {
	if n == nil {
		return list
	}
	return append(list, n)
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// escapeToken escapes a JSON pointer token (RFC 6901).
func escapeToken(t string) string {
	return strings.ReplaceAll(strings.ReplaceAll(t, "~", "~0"), "/", "~1")
}

// pointerText is a JSON pointer as an error names it.
func pointerText(ptr string) string {
	if ptr == "" {
		return "the top of the schema"
	}
	return clip(ptr, 2*MaxValueBytes)
}
