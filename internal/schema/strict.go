package schema

// The checks of decodeData for data the fast decoder leaves to encoding/json (bytes that are not
// UTF-8, nesting deeper than it follows): a walk of the tokens.

import (
	"bytes"
	"encoding/json"
	"strconv"
)

// strictFrame is an object or array being read: the names its members had so far, or its length.
type strictFrame struct {
	names  map[string]bool // nil: an array
	key    string          // the member being read
	length int
}

// checkStrict refuses data as decodeData would: a member name twice in one object, a number
// checkNumber refuses (a *DataError); nil for data it takes or that is not JSON (the decoder then
// says so). It also returns the depth of the data's nesting, as decodeData does, and the steps of the
// walk and of the decoding that follows it (3 × decodeSteps a token): past budget, it stops with
// errOverBudget.
func checkStrict(data []byte, budget int64) (int, int64, error) {
	left := budget - int64(len(data)/16)
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var stack []*strictFrame
	depth := 0
	fail := func(de *DataError, inTop bool) (int, int64, error) {
		last := len(stack) - 1
		if !inTop {
			last-- // a name twice: the path is the object's
		}
		for i := last; i >= 0; i-- {
			f := stack[i]
			if f.names != nil {
				de.tokens = append(de.tokens, f.key)
			} else {
				de.tokens = append(de.tokens, strconv.Itoa(f.length-1))
			}
		}
		return 0, 0, de.finish()
	}
	expectKey := false
	for {
		if left -= 3 * decodeSteps; left < 0 {
			return 0, budget, errOverBudget
		}
		tok, err := dec.Token()
		if err != nil {
			return depth, budget - left, nil
		}
		top := (*strictFrame)(nil)
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if expectKey {
			if name, ok := tok.(string); ok {
				if top.names[name] {
					return fail(duplicateName(name), false)
				}
				top.names[name] = true
				top.key = name
				expectKey = false
				continue
			}
		}
		if top != nil && top.names == nil && tok != json.Delim(']') {
			top.length++
		}
		switch tok := tok.(type) {
		case json.Delim:
			switch tok {
			case '{':
				stack = append(stack, &strictFrame{names: map[string]bool{}})
				depth = max(depth, len(stack))
				expectKey = true
				continue
			case '[':
				stack = append(stack, &strictFrame{})
				depth = max(depth, len(stack))
			default:
				stack = stack[:len(stack)-1]
			}
		case json.Number:
			if err := checkNumber(string(tok)); err != nil {
				return fail(err.(*DataError), true)
			}
		}
		if len(stack) > 0 && stack[len(stack)-1].names != nil {
			expectKey = true
		}
	}
}
