package schema

import (
	"fmt"
	"strings"
	"testing"
)

// worstDataBytes is the data of the worst cases: the default bound of an event's body (256 KiB) less
// its envelope.
const worstDataBytes = 256<<10 - 256

// worstCase is a schema within every bound of Compile and data within the payload bound, chosen to
// make the validator work hardest per byte in one way.
type worstCase struct {
	name, schema string
	data         func() string
}

// repeatJSON is a JSON array of as many copies of item as fit in worstDataBytes.
func repeatJSON(item string) string {
	n := (worstDataBytes - 2) / (len(item) + 1)
	return "[" + strings.Repeat(item+",", n-1) + item + "]"
}

// bigObject is a JSON object of as many members "k<i>": value as fit in worstDataBytes.
func bigObject(value string) string {
	var b strings.Builder
	b.WriteString("{")
	for i := 0; b.Len() < worstDataBytes-len(value)-32; i++ {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `"k%d":%s`, i, value)
	}
	b.WriteString("}")
	return b.String()
}

// nestedArrays is depth arrays nested in one another.
func nestedArrays(depth int) string { return strings.Repeat("[", depth) + strings.Repeat("]", depth) }

// expandTo is doublingSchema(7) (510 subschemas applied to the value) with d0 = leaf.
func expandTo(leaf string) string {
	return strings.Replace(doublingSchema(7), `"d0": {"type": "object"}`, `"d0": `+leaf, 1)
}

// manyPatterns is n patternProperties of pattern p, each applying {}.
func manyPatterns(n int, p string) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = fmt.Sprintf(`"%s%d": {}`, p, i)
	}
	return strings.Join(parts, ",")
}

// numbers is "[n, n, …]" of the number text n.
func numbers(n string) func() string { return func() string { return repeatJSON(n) } }

var worstCases = []worstCase{
	{"decoding only: tiny numbers", `{}`, func() string { return repeatJSON("1") }},
	{"decoding only: small objects", `{}`, func() string { return repeatJSON(`{"a":1,"b":2}`) }},
	{"legit: 256 KiB of integers, minimum 0", `{"type": "array", "items": {"type": "integer", "minimum": 0}}`, numbers("12345")},
	{"legit: 256 KiB of small objects", `{"type": "array", "items": {"type": "object", "required": ["id"],
		"properties": {"id": {"type": "string"}, "n": {"type": "integer"}, "ok": {"type": "boolean"}}}}`,
		func() string { return repeatJSON(`{"id":"abcdef","n":12345,"ok":true}`) }},
	{doublingRecursion,
		`{"$defs": {"r": {"type": "array", "items": {"$ref": "#/$defs/r"}, "contains": {"$ref": "#/$defs/r"}}}, "$ref": "#/$defs/r"}`,
		func() string { return nestedArrays(60) }},
	{"510 subschemas walking a big object", expandTo(`{"minProperties": 1}`), func() string { return bigObject("1") }},
	{"510 subschemas walking a big array", expandTo(`{"maxItems": 100000}`), func() string { return repeatJSON("1") }},
	{"510 subschemas failing the type on every element",
		strings.Replace(expandTo(`{"type": "string"}`), `"$ref": "#/$defs/d7"}`, `"items": {"$ref": "#/$defs/d7"}}`, 1),
		func() string { return repeatJSON("1") }},
	{"uniqueItems 510 times", expandTo(`{"uniqueItems": true}`), func() string { return repeatJSON(`"abcdefgh"`) }},
	{"a costly pattern on long strings", `{"items": {"pattern": "^(a|aa|aaa|aaaa|b{2,9}c?[a-z0-9]{3,11}x){1,40}$"}}`,
		func() string { return repeatJSON(`"` + strings.Repeat("a", 16<<10) + `"`) }},
	{"a costly pattern 510 times", expandTo(`{"pattern": "(x+x+)+y|[a-z]{2,30}q"}`),
		func() string { return `"` + strings.Repeat("x", worstDataBytes-2) + `"` }},
	{"many patternProperties on long names",
		`{"patternProperties": {` + manyPatterns(400, "^(a|b)+c") + `}}`,
		func() string { return bigObject("0") }},
	{"format regex on long strings", `{"items": {"format": "regex"}}`,
		func() string { return repeatJSON(`"` + strings.Repeat("(a|b)*c", 1024) + `"`) }},
	{"format email and date-time 510 times", expandTo(`{"allOf": [{"format": "email"}, {"format": "date-time"}, {"format": "uri"}]}`),
		func() string { return `"` + strings.Repeat("a", worstDataBytes-20) + `@example.com"` }},
	{"enum of 1,000 numbers on each element", `{"items": {"enum": [` + strings.TrimSuffix(strings.Repeat("1.7777777777777777777777777e-399,", 1000), ",") + `]}}`,
		numbers("1.7777777777777777777777777777777e-400")},
	{"numeric checks on long numbers", `{"items": {"type": "integer", "minimum": 0, "maximum": 1e400, "multipleOf": 0.0001, "exclusiveMinimum": -1}}`,
		numbers("1.7777777777777777777777777777777e-400")},
	{"const of a big object", `{"items": {"const": ` + bigObjectOf(2000) + `}}`, func() string { return "[" + bigObjectOf(2000) + "]" }},
	{"unevaluatedProperties under 510 subschemas", expandTo(`{"properties": {"k1": true}, "unevaluatedProperties": {"type": "integer"}}`),
		func() string { return bigObject("1") }},
	{"oneOf of 300 on each element", `{"items": {"oneOf": [` + strings.TrimSuffix(strings.Repeat(`{"type": "integer", "minimum": 0},`, 300), ",") + `]}}`,
		func() string { return repeatJSON("7") }},
	{"contentSchema of a long JSON string", `{"contentMediaType": "application/json", "contentSchema": {"items": {"type": "integer"}}}`,
		func() string { return `"` + strings.ReplaceAll(repeatJSON("1")[:worstDataBytes/2], `"`, `\"`) + `1]"` }},
	{"propertyNames with a pattern", `{"propertyNames": {"pattern": "^(k|j)+[0-9]{1,9}$", "maxLength": 64}}`,
		func() string { return bigObject("0") }},
	{"deep data, recursive schema", `{"$defs": {"r": {"type": ["array", "object"], "items": {"$ref": "#/$defs/r"}, "additionalProperties": {"$ref": "#/$defs/r"}}}, "$ref": "#/$defs/r"}`,
		func() string { return strings.Repeat(`[{"a":`, 999) + "1" + strings.Repeat("}]", 999) }},
}

// doublingRecursion is the worst case whose schema applies itself twice to each level of the data.
const doublingRecursion = "recursion doubling per level (items+contains)"

// worstCaseNamed is the worst case named name.
func worstCaseNamed(t testing.TB, name string) worstCase {
	for _, c := range worstCases {
		if c.name == name {
			return c
		}
	}
	t.Fatalf("no worst case %q", name)
	return worstCase{}
}

// bigObjectOf is an object of n members "m<i>": "value-<i>".
func bigObjectOf(n int) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = fmt.Sprintf(`"m%d": "value-%d"`, i, i)
	}
	return "{" + strings.Join(parts, ",") + "}"
}
