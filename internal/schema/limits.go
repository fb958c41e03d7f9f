package schema

// The bounds of a schema and of its validation (docs/security.md lists each): a schema is checked
// against the first four before it is decoded or compiled; the work of one validation is metered
// against MaxSteps (meter.go).

import "fmt"

const (
	// MaxBytes bounds a schema's JSON text.
	MaxBytes = 64 << 10
	// MaxDepth bounds the nesting of a schema's JSON text (objects and arrays, the outermost is 1).
	MaxDepth = 64
	// MaxSubschemas bounds the subschemas of a schema (the schema itself included).
	MaxSubschemas = 2000
	// MaxExpansion bounds how many subschemas a schema may apply to one value of the data: a
	// subschema with everything it applies in place ($ref, allOf, anyOf, oneOf, not, if, then,
	// else, dependentSchemas) counted as often as it is reached, which doubles with each level of
	// `allOf: [{$ref: a}, {$ref: a}]`.
	MaxExpansion = 1000
	// MaxSteps bounds the work of one validation (meter.go), a step being about 10 ns of it: a value
	// the validator applies a subschema to costs visitSteps, each member it then walks memberSteps, a
	// string or number each check of it scans by its length. Data whose validation would take more is
	// refused.
	MaxSteps = 2_000_000
	// MaxValueBytes bounds what an error quotes of a value of the data.
	MaxValueBytes = 100
	// MaxNumberLen bounds the text of a number in data held to a schema (a longer one, or one whose
	// exponent is beyond ±maxExponent, costs the validator's big-number arithmetic more than its
	// bound: 1e999999 takes 17 ms a check).
	MaxNumberLen = 40
	// maxExponent bounds the absolute exponent of a number in data held to a schema (float64 needs 324).
	maxExponent = 400
)

// checkText refuses a schema text over MaxBytes or nested deeper than MaxDepth, before it is
// decoded: it reads the bytes once, skipping strings.
func checkText(raw []byte) error {
	if len(raw) > MaxBytes {
		return fmt.Errorf("schema is %d bytes, more than %d: shorten it", len(raw), MaxBytes)
	}
	depth, inString := 0, false
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if inString {
			switch c {
			case '\\':
				i++
			case '"':
				inString = false
			}
			continue
		}
		switch c {
		case '"':
			inString = true
		case '{', '[':
			if depth++; depth > MaxDepth {
				return fmt.Errorf("schema nests more than %d levels deep (at byte %d): flatten it, moving nested parts under $defs and referring to them with $ref", MaxDepth, i)
			}
		case '}', ']':
			depth--
		}
	}
	return nil
}
