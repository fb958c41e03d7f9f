package filter

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// filterCase is one filter evaluated against one event of type filterTestType (unless eventType is
// set) with the given data.
type filterCase struct {
	name      string
	filter    string
	eventType string
	data      string
	want      bool
}

const filterTestType = "pool.created"

func runFilterCases(t *testing.T, cases []filterCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f, err := Parse(json.RawMessage(tc.filter))
			require.NoError(t, err, "filter %s", tc.filter)
			require.NotNil(t, f, "filter %s", tc.filter)
			typ := tc.eventType
			if typ == "" {
				typ = filterTestType
			}
			assert.Equal(t, tc.want, f.Match(NewDocument(typ, []byte(tc.data))), "filter %s on type %q data %s", tc.filter, typ, tc.data)
		})
	}
}

// TestFilterOperators: each operator holds when it should and not otherwise, on scalars.
func TestFilterOperators(t *testing.T) {
	t.Parallel()
	runFilterCases(t, []filterCase{
		// bare value and $eq
		{"bare type equal", `{"type": "pool.created"}`, "", `{}`, true},
		{"bare type differs", `{"type": "pool.deleted"}`, "", `{}`, false},
		{"eq string", `{"data.s": {"$eq": "x"}}`, "", `{"s": "x"}`, true},
		{"eq string differs", `{"data.s": {"$eq": "x"}}`, "", `{"s": "y"}`, false},
		{"eq number numerically", `{"data.n": {"$eq": 1}}`, "", `{"n": 1.0}`, true},
		{"eq number exponent form", `{"data.n": 100}`, "", `{"n": 1e2}`, true},
		{"eq number differs", `{"data.n": 1}`, "", `{"n": 1.5}`, false},
		{"eq big integers differ", `{"data.n": 9007199254740993}`, "", `{"n": 9007199254740992}`, false},
		{"eq big decimals equal", `{"data.n": 123456789012345678901234567890.5}`, "", `{"n": 1234567890123456789012345678905e-1}`, true},
		{"eq bool", `{"data.b": true}`, "", `{"b": true}`, true},
		{"eq bool differs", `{"data.b": true}`, "", `{"b": false}`, false},
		{"eq null", `{"data.z": null}`, "", `{"z": null}`, true},
		{"eq null is not missing", `{"data.z": null}`, "", `{}`, false},
		{"eq object deep", `{"data.o": {"$eq": {"a": [1, {"b": 2}]}}}`, "", `{"o": {"a": [1.0, {"b": 2}]}}`, true},
		{"eq object extra key", `{"data.o": {"$eq": {"a": 1}}}`, "", `{"o": {"a": 1, "b": 2}}`, false},
		{"eq object differs deep", `{"data.o": {"$eq": {"a": [1, {"b": 2}]}}}`, "", `{"o": {"a": [1, {"b": 3}]}}`, false},
		{"eq empty object", `{"data.o": {"$eq": {}}}`, "", `{"o": {}}`, true},
		{"eq array whole", `{"data.a": [1, 2]}`, "", `{"a": [1, 2]}`, true},
		{"eq array order matters", `{"data.a": {"$eq": [1, 2]}}`, "", `{"a": [2, 1]}`, false},
		{"eq missing", `{"data.s": "x"}`, "", `{}`, false},
		// $neq
		{"neq differs", `{"data.s": {"$neq": "x"}}`, "", `{"s": "y"}`, true},
		{"neq equal", `{"data.s": {"$neq": "x"}}`, "", `{"s": "x"}`, false},
		{"neq numerically equal", `{"data.n": {"$neq": 2}}`, "", `{"n": 2.00}`, false},
		{"neq missing", `{"data.s": {"$neq": "x"}}`, "", `{}`, true},
		{"neq null missing", `{"data.z": {"$neq": null}}`, "", `{}`, true},
		{"neq null present", `{"data.z": {"$neq": null}}`, "", `{"z": null}`, false},
		{"neq type", `{"type": {"$neq": "pool.created"}}`, "", `{}`, false},
		// ordering, numbers
		{"gt number true", `{"data.n": {"$gt": 10}}`, "", `{"n": 10.5}`, true},
		{"gt number equal", `{"data.n": {"$gt": 10}}`, "", `{"n": 10}`, false},
		{"gt number negative", `{"data.n": {"$gt": -1}}`, "", `{"n": -2}`, false},
		{"gte number equal", `{"data.n": {"$gte": 10}}`, "", `{"n": 1e1}`, true},
		{"gte number less", `{"data.n": {"$gte": 10}}`, "", `{"n": 9.999}`, false},
		{"lt number true", `{"data.n": {"$lt": 10}}`, "", `{"n": 9}`, true},
		{"lt number equal", `{"data.n": {"$lt": 10}}`, "", `{"n": 10}`, false},
		{"lte number equal", `{"data.n": {"$lte": 10}}`, "", `{"n": 10.0}`, true},
		{"lte number greater", `{"data.n": {"$lte": 10}}`, "", `{"n": 11}`, false},
		{"gt beyond int64", `{"data.n": {"$gt": 9223372036854775807}}`, "", `{"n": 9223372036854775808}`, true},
		{"gt beyond float64 precision", `{"data.n": {"$gt": 9007199254740992.0}}`, "", `{"n": 9007199254740993}`, true},
		{"gt huge exponent", `{"data.n": {"$gt": 1e308}}`, "", `{"n": 1e400}`, true},
		// ordering, strings
		{"gt string", `{"data.s": {"$gt": "b"}}`, "", `{"s": "c"}`, true},
		{"gt string less", `{"data.s": {"$gt": "b"}}`, "", `{"s": "a"}`, false},
		{"gte string equal", `{"data.s": {"$gte": "b"}}`, "", `{"s": "b"}`, true},
		{"lt string prefix", `{"data.s": {"$lt": "ab"}}`, "", `{"s": "a"}`, true},
		{"lte string greater", `{"data.s": {"$lte": "ab"}}`, "", `{"s": "b"}`, false},
		{"lt date strings", `{"data.at": {"$lt": "2025-01-01T00:00:00Z"}}`, "", `{"at": "2024-12-31T23:59:59Z"}`, true},
		// $in / $nin
		{"in string", `{"data.s": {"$in": ["a", "b"]}}`, "", `{"s": "b"}`, true},
		{"in string absent", `{"data.s": {"$in": ["a", "b"]}}`, "", `{"s": "c"}`, false},
		{"in number numerically", `{"data.n": {"$in": [1, 2]}}`, "", `{"n": 2.0}`, true},
		{"in object", `{"data.o": {"$in": [{"k": 1}]}}`, "", `{"o": {"k": 1}}`, true},
		{"in empty", `{"data.s": {"$in": []}}`, "", `{"s": "a"}`, false},
		{"in missing", `{"data.s": {"$in": ["a", null]}}`, "", `{}`, false},
		{"nin absent", `{"data.s": {"$nin": ["a", "b"]}}`, "", `{"s": "c"}`, true},
		{"nin present", `{"data.s": {"$nin": ["a", "b"]}}`, "", `{"s": "a"}`, false},
		{"nin empty", `{"data.s": {"$nin": []}}`, "", `{"s": "a"}`, true},
		{"nin missing", `{"data.s": {"$nin": ["a"]}}`, "", `{}`, true},
		{"nin null missing", `{"data.s": {"$nin": [null]}}`, "", `{}`, true},
		{"in type", `{"type": {"$in": ["pool.created", "pool.deleted"]}}`, "", `null`, true},
		// $exist
		{"exist true present", `{"data.s": {"$exist": true}}`, "", `{"s": 1}`, true},
		{"exist true null counts", `{"data.s": {"$exist": true}}`, "", `{"s": null}`, true},
		{"exist true missing", `{"data.s": {"$exist": true}}`, "", `{"t": 1}`, false},
		{"exist false missing", `{"data.s": {"$exist": false}}`, "", `{"t": 1}`, true},
		{"exist false present", `{"data.s": {"$exist": false}}`, "", `{"s": false}`, false},
		{"exist data", `{"data": {"$exist": true}}`, "", `0`, true},
		{"exist data not valid json", `{"data": {"$exist": false}}`, "", `{`, true},
		// $startsWith / $endsWith
		{"startsWith true", `{"data.s": {"$startsWith": "ab"}}`, "", `{"s": "abc"}`, true},
		{"startsWith false", `{"data.s": {"$startsWith": "bc"}}`, "", `{"s": "abc"}`, false},
		{"startsWith empty prefix", `{"data.s": {"$startsWith": ""}}`, "", `{"s": "abc"}`, true},
		{"startsWith type", `{"type": {"$startsWith": "pool."}}`, "", ``, true},
		{"endsWith true", `{"data.s": {"$endsWith": "@example.com"}}`, "", `{"s": "a@example.com"}`, true},
		{"endsWith false", `{"data.s": {"$endsWith": "@example.com"}}`, "", `{"s": "a@example.org"}`, false},
		{"endsWith not at the end", `{"data.s": {"$endsWith": "@example.com"}}`, "", `{"s": "a@example.com.evil"}`, false},
		{"startsWith not at the start", `{"data.s": {"$startsWith": "ab"}}`, "", `{"s": "cabd"}`, false},
		{"endsWith type", `{"type": {"$endsWith": ".deleted"}}`, "", ``, false},
		// several operators on one value
		{"range inside", `{"data.n": {"$gte": 100, "$lt": 500}}`, "", `{"n": 499}`, true},
		{"range outside", `{"data.n": {"$gte": 100, "$lt": 500}}`, "", `{"n": 500}`, false},
	})
}

// TestFilterTypeMismatch: values of different kinds are never equal and never ordered, and string
// operators hold only for strings.
func TestFilterTypeMismatch(t *testing.T) {
	t.Parallel()
	runFilterCases(t, []filterCase{
		{"eq number vs string", `{"data.n": 1}`, "", `{"n": "1"}`, false},
		{"eq string vs number", `{"data.n": "1"}`, "", `{"n": 1}`, false},
		{"eq bool vs number", `{"data.n": true}`, "", `{"n": 1}`, false},
		{"eq null vs false", `{"data.n": null}`, "", `{"n": false}`, false},
		{"eq object vs array", `{"data.n": {"$eq": {}}}`, "", `{"n": []}`, false},
		{"neq number vs string", `{"data.n": {"$neq": 1}}`, "", `{"n": "1"}`, true},
		{"gt number vs string", `{"data.n": {"$gt": 1}}`, "", `{"n": "2"}`, false},
		{"lt string vs number", `{"data.n": {"$lt": "z"}}`, "", `{"n": 1}`, false},
		{"gte bool", `{"data.n": {"$gte": 0}}`, "", `{"n": true}`, false},
		{"lte null", `{"data.n": {"$lte": 0}}`, "", `{"n": null}`, false},
		{"gt object", `{"data.n": {"$gt": 0}}`, "", `{"n": {"a": 1}}`, false},
		{"gt missing", `{"data.n": {"$gt": 0}}`, "", `{}`, false},
		{"startsWith number", `{"data.n": {"$startsWith": "1"}}`, "", `{"n": 12}`, false},
		{"endsWith bool", `{"data.n": {"$endsWith": "e"}}`, "", `{"n": true}`, false},
		{"in string vs number", `{"data.n": {"$in": ["1"]}}`, "", `{"n": 1}`, false},
		{"path through string", `{"data.s.x": {"$exist": true}}`, "", `{"s": "x"}`, false},
		{"path through number", `{"data.n.x": {"$exist": false}}`, "", `{"n": 1}`, true},
		{"path into non-object data", `{"data.x": 1}`, "", `[{"x": 1}]`, false},
	})
}

// TestFilterArrays: a condition on an array holds if the array as a whole or any one element
// satisfies it; the negations hold only when no element does; paths do not walk into arrays.
func TestFilterArrays(t *testing.T) {
	t.Parallel()
	runFilterCases(t, []filterCase{
		{"bare value contained", `{"data": {"tags": "urgent"}}`, "", `{"tags": ["support", "urgent"]}`, true},
		{"bare value not contained", `{"data": {"tags": "urgent"}}`, "", `{"tags": ["support"]}`, false},
		{"eq number contained", `{"data.ns": {"$eq": 2}}`, "", `{"ns": [1, 2.0]}`, true},
		{"eq whole array", `{"data.ns": {"$eq": [1, 2]}}`, "", `{"ns": [1, 2]}`, true},
		{"eq nested array element", `{"data.ns": {"$eq": [1]}}`, "", `{"ns": [[1], 2]}`, true},
		{"eq one level only", `{"data.ns": 1}`, "", `{"ns": [[1], 2]}`, false},
		{"eq object element", `{"data.items": {"$eq": {"sku": "a"}}}`, "", `{"items": [{"sku": "a"}]}`, true},
		{"empty array", `{"data.ns": 1}`, "", `{"ns": []}`, false},
		{"neq contained", `{"data.tags": {"$neq": "a"}}`, "", `{"tags": ["a", "b"]}`, false},
		{"neq not contained", `{"data.tags": {"$neq": "a"}}`, "", `{"tags": ["b", "c"]}`, true},
		{"gt any element", `{"data.ns": {"$gt": 10}}`, "", `{"ns": [1, 11]}`, true},
		{"gt no element", `{"data.ns": {"$gt": 10}}`, "", `{"ns": [1, 10, "20"]}`, false},
		{"lte any element", `{"data.ns": {"$lte": 1}}`, "", `{"ns": [5, 1]}`, true},
		{"range on different elements", `{"data.ns": {"$gt": 10, "$lt": 5}}`, "", `{"ns": [1, 11]}`, true},
		{"in any element", `{"data.tags": {"$in": ["x", "b"]}}`, "", `{"tags": ["b", "c"]}`, true},
		{"in no element", `{"data.tags": {"$in": ["x", "y"]}}`, "", `{"tags": ["b", "c"]}`, false},
		{"nin some element listed", `{"data.tags": {"$nin": ["x", "b"]}}`, "", `{"tags": ["b", "c"]}`, false},
		{"nin no element listed", `{"data.tags": {"$nin": ["x", "y"]}}`, "", `{"tags": ["b", "c"]}`, true},
		{"startsWith any element", `{"data.tags": {"$startsWith": "ur"}}`, "", `{"tags": [1, "urgent"]}`, true},
		{"endsWith no element", `{"data.tags": {"$endsWith": "zz"}}`, "", `{"tags": ["urgent"]}`, false},
		{"exist empty array", `{"data.tags": {"$exist": true}}`, "", `{"tags": []}`, true},
		{"path does not walk into array", `{"data.items.sku": "a"}`, "", `{"items": [{"sku": "a"}]}`, false},
		{"nested does not walk into array", `{"data": {"items": {"sku": {"$exist": false}}}}`, "", `{"items": [{"sku": "a"}]}`, true},
	})
}

// TestFilterPaths: nested objects and dotted keys walk into the event alike, at any depth, and
// mix with operators in one object.
func TestFilterPaths(t *testing.T) {
	t.Parallel()
	data := `{"amount": 12, "customer": {"tier": "premium", "address": {"country": "FR"}}, "a.b": 1}`
	runFilterCases(t, []filterCase{
		{"nested", `{"data": {"amount": {"$gt": 10}}}`, "", data, true},
		{"nested false", `{"data": {"amount": {"$gt": 12}}}`, "", data, false},
		{"dotted", `{"data.amount": {"$gte": 12}}`, "", data, true},
		{"dotted false", `{"data.amount": {"$gte": 13}}`, "", data, false},
		{"deep nested", `{"data": {"customer": {"address": {"country": "FR"}}}}`, "", data, true},
		{"deep nested false", `{"data": {"customer": {"address": {"country": "DE"}}}}`, "", data, false},
		{"deep dotted", `{"data.customer.address.country": "FR"}`, "", data, true},
		{"mixed dotted in nested", `{"data": {"customer.address": {"country": {"$in": ["FR", "BE"]}}}}`, "", data, true},
		{"mixed dotted in nested false", `{"data": {"customer.address.country": "BE"}}`, "", data, false},
		{"several keys all hold", `{"type": "pool.created", "data": {"amount": 12, "customer.tier": "premium"}}`, "", data, true},
		{"several keys one fails", `{"type": "pool.created", "data": {"amount": 12, "customer.tier": "basic"}}`, "", data, false},
		{"operator and field in one object", `{"data": {"$exist": true, "customer": {"$exist": true, "tier": "premium"}}}`, "", data, true},
		{"operator and field in one object false", `{"data": {"customer": {"$exist": true, "tier": "basic"}}}`, "", data, false},
		{"missing intermediate", `{"data.nobody.tier": {"$exist": true}}`, "", data, false},
		{"missing intermediate exist false", `{"data.nobody.tier": {"$exist": false}}`, "", data, true},
		{"literal dotted key is not addressable", `{"data": {"a.b": 1}}`, "", data, false},
		{"type only ignores bad data", `{"type": "pool.created"}`, "", `not json`, true},
		{"other type", `{"type": "pool.created"}`, "pool.deleted", data, false},
	})
}

// TestFilterLogic: $or, $and and $not combine filters, at the top level and on one field.
func TestFilterLogic(t *testing.T) {
	t.Parallel()
	data := `{"cities": ["london", "paris"], "type": "weekly", "age": 12}`
	runFilterCases(t, []filterCase{
		{"or first", `{"$or": [{"data.cities": "london"}, {"data.type": "daily"}]}`, "", data, true},
		{"or second", `{"$or": [{"data.cities": "lagos"}, {"data.type": "weekly"}]}`, "", data, true},
		{"or none", `{"$or": [{"data.cities": "lagos"}, {"data.type": "daily"}]}`, "", data, false},
		{"and all", `{"$and": [{"data.age": {"$gte": 10}}, {"data.type": "weekly"}]}`, "", data, true},
		{"and one fails", `{"$and": [{"data.age": {"$gte": 13}}, {"data.type": "weekly"}]}`, "", data, false},
		{"and with nested or", `{"$and": [{"data.age": {"$gte": 10}}, {"$or": [{"data.type": "daily"}, {"data.cities": "paris"}]}]}`, "", data, true},
		{"and with nested or false", `{"$and": [{"data.age": {"$gte": 10}}, {"$or": [{"data.type": "daily"}, {"data.cities": "lagos"}]}]}`, "", data, false},
		{"not true", `{"$not": {"data.type": "daily"}}`, "", data, true},
		{"not false", `{"$not": {"data.type": "weekly"}}`, "", data, false},
		{"not on field", `{"data.age": {"$not": {"$gt": 20}}}`, "", data, true},
		{"not on field false", `{"data.age": {"$not": {"$gt": 10}}}`, "", data, false},
		{"not missing", `{"data.nothing": {"$not": {"$eq": 1}}}`, "", data, true},
		{"not of or", `{"$not": {"$or": [{"data.type": "daily"}, {"data.age": 13}]}}`, "", data, true},
		{"not of or false", `{"$not": {"$or": [{"data.type": "daily"}, {"data.age": 12}]}}`, "", data, false},
		{"or on field", `{"data.age": {"$or": [{"$lt": 5}, {"$gt": 10}]}}`, "", data, true},
		{"or on field false", `{"data.age": {"$or": [{"$lt": 5}, {"$gt": 12}]}}`, "", data, false},
		{"or under data relative", `{"data": {"$or": [{"age": 1}, {"type": "weekly"}]}}`, "", data, true},
		{"and under data relative false", `{"data": {"$and": [{"age": 12}, {"type": "daily"}]}}`, "", data, false},
		{"or and sibling field", `{"type": "pool.created", "$or": [{"data.age": 1}, {"data.age": 12}]}`, "", data, true},
		{"or and sibling field false", `{"type": "pool.deleted", "$or": [{"data.age": 1}, {"data.age": 12}]}`, "", data, false},
		{"double not", `{"$not": {"$not": {"data.type": "weekly"}}}`, "", data, true},
		{"and single", `{"$and": [{"type": "pool.created"}]}`, "", data, true},
	})
}

// TestFilterNoFilter: nil, empty, whitespace, null and {} are no filter, which matches every event,
// and a nil *Filter matches everything.
func TestFilterNoFilter(t *testing.T) {
	t.Parallel()
	for _, raw := range []string{"", "  \n", "null", " {} "} {
		f, err := Parse(json.RawMessage(raw))
		require.NoError(t, err, "%q", raw)
		assert.Nil(t, f, "%q", raw)
	}
	f, err := Parse(nil)
	require.NoError(t, err)
	assert.Nil(t, f)
	var nilFilter *Filter
	assert.True(t, nilFilter.Match(NewDocument("x", []byte(`{`))))
	assert.True(t, (&Filter{}).Match(NewDocument("x", nil)))
}

// TestFilterInvalid: filters that are not acceptable are refused with a message naming the place and the problem.
func TestFilterInvalid(t *testing.T) {
	t.Parallel()
	// The filter object is depth 1; {"data": {"a": ... is depth 2 at the first "a" object.
	deep := `{"data": ` + strings.Repeat(`{"a": `, 16) + `1` + strings.Repeat(`}`, 16) + `}`
	okDeep := `{"data": ` + strings.Repeat(`{"a": `, 15) + `1` + strings.Repeat(`}`, 15) + `}`
	deepArr := `{"data.a": {"$in": ` + strings.Repeat(`[`, 15) + strings.Repeat(`]`, 15) + `}}`
	okDeepArr := `{"data.a": {"$in": ` + strings.Repeat(`[`, 14) + strings.Repeat(`]`, 14) + `}}`
	manyNodes := `{"data.a": {"$in": [` + strings.TrimSuffix(strings.Repeat(`1,`, 254), ",") + `]}}`
	okNodes := `{"data.a": {"$in": [` + strings.TrimSuffix(strings.Repeat(`1,`, 253), ",") + `]}}`
	okBig := `{"data.a": "` + strings.Repeat("x", MaxBytes-len(`{"data.a": ""}`)) + `"}`
	require.Len(t, okBig, MaxBytes)
	big := okBig[:len(okBig)-2] + `x"}` // one byte over

	// The bounds are tight: one less is accepted.
	for _, raw := range []string{okDeep, okDeepArr, okNodes, okBig} {
		_, err := Parse(json.RawMessage(raw))
		require.NoError(t, err, "%.80s", raw)
	}

	cases := []struct {
		name, filter, msg string
	}{
		{"not json", `{"type": `, "not valid JSON"},
		{"trailing data", `{"type": "a"} {}`, "data after the JSON value"},
		{"trailing bracket", `{"type": "a"}]`, "data after the JSON value"},
		{"not an object", `["type"]`, "must be a JSON object, got an array"},
		{"string", `"pool.created"`, "must be a JSON object, got a string"},
		{"invalid utf8", "{\"type\": \"\xff\"}", "not valid UTF-8"},
		{"duplicate key", `{"type": "a", "type": "b"}`, `repeats the key "type"`},
		{"unknown operator", `{"data.a": {"$regex": "x"}}`, `filter at data.a.$regex is an unknown operator "$regex"`},
		{"unknown operator exists", `{"data.a": {"$exists": true}}`, `unknown operator "$exists"`},
		{"unknown top-level field", `{"topic": "a"}`, `filter at topic names an unknown field "topic"`},
		{"unknown top-level field in or", `{"$or": [{"type": "a"}, {"metadata.x": 1}]}`, `filter at $or[1].metadata.x names an unknown field "metadata"`},
		{"unknown top-level field in not", `{"$not": {"id": "a"}}`, `names an unknown field "id"`},
		{"operator on the whole event", `{"$eq": {"type": "a"}}`, "compares the whole event"},
		{"empty path segment", `{"data..a": 1}`, `filter at data..a has an empty path segment`},
		{"trailing dot", `{"data.": 1}`, "empty path segment"},
		{"operator in path", `{"data.$gt": 1}`, `operator "$gt" inside a path`},
		{"empty nested object", `{"data": {"a": {}}}`, `filter at data.a is an empty object`},
		{"gt bool", `{"data.a": {"$gt": true}}`, `filter at data.a.$gt takes a number or a string, got a bool`},
		{"gte null", `{"data.a": {"$gte": null}}`, "takes a number or a string, got null"},
		{"lt array", `{"data.a": {"$lt": [1]}}`, "takes a number or a string, got an array"},
		{"lte object", `{"data.a": {"$lte": {"x": 1}}}`, "takes a number or a string, got an object"},
		{"in string", `{"data.a": {"$in": "ab"}}`, `filter at data.a.$in takes an array, got a string`},
		{"nin object", `{"data.a": {"$nin": {"a": 1}}}`, "takes an array, got an object"},
		{"exist string", `{"data.a": {"$exist": "true"}}`, `filter at data.a.$exist takes true or false, got a string`},
		{"startsWith number", `{"data.a": {"$startsWith": 1}}`, `filter at data.a.$startsWith takes a string, got a number`},
		{"endsWith array", `{"data.a": {"$endsWith": ["a"]}}`, "takes a string, got an array"},
		{"or object", `{"$or": {"type": "a"}}`, `filter at $or takes a non-empty array of filters, got an object`},
		{"or empty", `{"$or": []}`, "takes a non-empty array of filters"},
		{"and element not object", `{"$and": [{"type": "a"}, "b"]}`, `filter at $and[1] must be a filter object, got a string`},
		{"and element empty", `{"$and": [{}]}`, `filter at $and[0] is an empty object`},
		{"not array", `{"$not": [{"type": "a"}]}`, `filter at $not takes a filter object, got an array`},
		{"not scalar", `{"data.a": {"$not": 1}}`, "takes a filter object, got a number"},
		{"nested error path", `{"data": {"x": {"$or": [{"$gt": 1}, {"$in": 2}]}}}`, `filter at data.x.$or[1].$in takes an array`},
		{"too deep", deep, "nests deeper than 16 levels"},
		{"too deep arrays", deepArr, "nests deeper than 16 levels"},
		{"too many nodes", manyNodes, "more than 256 values"},
		{"too big", big, fmt.Sprintf("is %d bytes; at most %d", len(big), MaxBytes)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f, err := Parse(json.RawMessage(tc.filter))
			require.Error(t, err, "%.100s", tc.filter)
			assert.Nil(t, f)
			assert.Contains(t, err.Error(), tc.msg)
		})
	}
}

// TestFilterDecodesDataOnce: a filter that reads only the type does not decode the data, and the
// data of one Document is decoded once however many filters read it.
func TestFilterDecodesDataOnce(t *testing.T) {
	t.Parallel()
	typeOnly, err := Parse([]byte(`{"type": {"$startsWith": "pool."}}`))
	require.NoError(t, err)
	d := NewDocument("pool.created", []byte(`{"x": 2}`))
	assert.True(t, typeOnly.Match(d))
	assert.Zero(t, d.decodes, "a type-only filter decoded the data")
	f, err := Parse([]byte(`{"$or": [{"type": "a"}, {"$not": {"data.x": 1}}]}`))
	require.NoError(t, err)
	for range 100 {
		assert.True(t, f.Match(d))
	}
	assert.Equal(t, 1, d.decodes, "100 matches of one Document")
	assert.False(t, f.Match(NewDocument("b", []byte(`{"x": 1}`))))
}

// TestFilterRoundTrip: a filter re-parses to an equal compiled filter after a JSON round trip, so
// storing the filter as re-encoded JSON does not change it; key order does not matter.
func TestFilterRoundTrip(t *testing.T) {
	t.Parallel()
	for _, raw := range []string{
		`{"type": "a", "data": {"n": {"$gte": 1.50, "$lt": 1e3}, "o": {"$eq": {"z": [1, {"y": null}], "a": true}}}}`,
		`{"$or": [{"data.tags": {"$in": ["a", 2, {"k": []}]}}, {"$not": {"type": {"$endsWith": "<&>"}}}]}`,
	} {
		f1, err := Parse(json.RawMessage(raw))
		require.NoError(t, err)
		f2, err := Parse(roundTripJSON(t, []byte(raw)))
		require.NoError(t, err)
		assert.True(t, reflect.DeepEqual(f1, f2), "%s", raw)
	}
	a, err := Parse(json.RawMessage(`{"data": {"b": 1, "a": 2}, "type": "t"}`))
	require.NoError(t, err)
	b, err := Parse(json.RawMessage(`{"type": "t", "data": {"a": 2, "b": 1}}`))
	require.NoError(t, err)
	assert.True(t, reflect.DeepEqual(a, b))
	c, err := Parse(json.RawMessage(`{"type": "t", "data": {"a": 2, "b": 2}}`))
	require.NoError(t, err)
	assert.False(t, reflect.DeepEqual(a, c))
}

// roundTripJSON decodes raw (UseNumber) and encodes it again, without HTML escaping.
func roundTripJSON(t testing.TB, raw []byte) []byte {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("decode %q: %v", raw, err)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatalf("encode %q: %v", raw, err)
	}
	return bytes.TrimSpace(buf.Bytes())
}

// filterProbes are event data documents with every kind of JSON value at the keys FuzzFilter's
// seeds use, and as the whole data.
var filterProbes = func() []json.RawMessage {
	kinds := []string{`null`, `true`, `false`, `0`, `1.5`, `-1e400`, `1e9999999999`, `""`, `"a"`, `"xy"`,
		`[]`, `[1, "a", true, null, {}, [1]]`, `{}`, `{"a": 1, "k": [true]}`}
	var out []json.RawMessage
	for _, k := range kinds {
		out = append(out, json.RawMessage(k))
		var b strings.Builder
		b.WriteString("{")
		for i, key := range []string{"a", "amount", "n", "o", "s", "tags", "x"} {
			if i > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, "%q: %s", key, k)
		}
		b.WriteString("}")
		out = append(out, json.RawMessage(b.String()))
	}
	return out
}()
