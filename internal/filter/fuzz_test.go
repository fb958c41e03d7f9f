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

// countedMatch matches f against d and returns the result with the steps it took and the bound
// the package doc promises: every condition costs at most (path length + 5 × values in the event
// + 3) steps, whatever its operands.
func countedMatch(f *Filter, d *Document) (matched bool, steps, bound int) {
	if f == nil || f.root == nil {
		return true, 0, 0
	}
	e := evaluator{doc: d}
	matched = e.eval(f.root, &d.root)
	d.load() // the bound counts the data's values whether or not the filter read them
	conds, path := shape(f.root)
	return matched, e.steps, conds * (path + 5*d.values + 3)
}

// shape returns the number of conditions under n and its longest path.
func shape(n *node) (conds, path int) {
	conds, path = 1, len(n.path)
	for _, s := range n.subs {
		c, p := shape(s)
		conds, path = conds+c, max(path, p)
	}
	return conds, path
}

// TestFilterWorkBound: a 250-value $in of floats against an event holding 4,000 floats takes one
// lookup per element, not operands × elements comparisons.
func TestFilterWorkBound(t *testing.T) {
	t.Parallel()
	var in, data strings.Builder
	for i := range 250 {
		fmt.Fprintf(&in, "%s%d.5", map[bool]string{true: "", false: ","}[i == 0], 100000+i)
	}
	for i := range 4000 {
		fmt.Fprintf(&data, "%s%d.25", map[bool]string{true: "", false: ","}[i == 0], i)
	}
	f, err := Parse([]byte(`{"data.xs": {"$in": [` + in.String() + `]}}`))
	require.NoError(t, err)
	d := NewDocument("a", []byte(`{"xs": [`+data.String()+`]}`))
	matched, steps, bound := countedMatch(f, d)
	assert.False(t, matched)
	assert.LessOrEqual(t, steps, bound)
	assert.LessOrEqual(t, steps, 2*d.values, "steps beyond one per value: operands × elements?")
	t.Logf("%d steps for %d event values", steps, d.values)
}

// FuzzFilter: Parse never panics on any bytes; Match never panics on any type and data and stays
// within the work bound of the package doc (countedMatch); an accepted filter re-parses to an equal
// compiled filter after a JSON round trip (unless re-encoding made it larger than the size bound:
// escaping can grow a string) that matches alike.
func FuzzFilter(f *testing.F) {
	seeds := [][3]string{
		{`{"type": "pool.created"}`, "pool.created", `{}`},
		{`{"data": {"amount": {"$gt": 10}}}`, "a", `{"amount": 11}`},
		{`{"data.amount": {"$gte": 10, "$lt": 1e3}}`, "a", `{"amount": 10.0}`},
		{`{"data.tags": {"$in": ["a", 1, null, {"k": [true]}]}}`, "a", `{"tags": ["a", [1]]}`},
		{`{"data.tags": {"$in": [1.5, 2.5, 3.5, 4.5, 5.5, 6.5, 7.5, 8.5]}}`, "a", `{"tags": [1.25, 2.25, 3.25, 4.25, 5.25, 6.25]}`},
		{`{"data.tags": {"$nin": []}, "data.s": {"$startsWith": "x", "$endsWith": "y"}}`, "a", `{"s": "xy"}`},
		{`{"$or": [{"type": {"$neq": "a"}}, {"$not": {"data.x": {"$exist": false}}}]}`, "a", `{"x": null}`},
		{`{"$and": [{"data": {"o": {"$eq": {"a": [1, 2]}}}}, {"data.n": {"$lte": 9223372036854775808}}]}`, "a", `{"o": {"a": [1, 2.0]}, "n": 1e400}`},
		{`{"data.n": {"$gt": 1e9999999999}}`, "a", `{"n": 1e9999999999}`},
		{`{"data.n": {"$gt": 1e99999999999999}}`, "a", `{"n": [1e99999999999999, -0.0e-5]}`},
		{`{"data.x": {"$regex": "a"}}`, "a", `{`},
		{`{"type": "a", "type": "b"}`, "", `[]`},
		{`null`, "a", `null`},
		{`{}`, "a", `1 2`},
		{`{"data": {"x": true, "n": {"$in": [false, "a"]}, "o": {"$eq": {"a": [null]}}}}`, "a", `{"x": 1, "n": [true], "o": {"a": [false]}}`},
		{`{"data.o.a.k": {"$gt": "a"}, "data": {"x.a": {"$endsWith": "y"}}}`, "a", `{"o": {"a": {"k": "b"}}, "x": {"a": "xy"}}`},
		{`{"data": {"s": {"$lt": "b", "$not": {"$gte": 2}}, "a": {"k": {"$exist": true}}}}`, "a", `{"s": ["a", 1], "a": {"k": 0}}`},
	}
	for _, s := range seeds {
		f.Add([]byte(s[0]), s[1], []byte(s[2]))
	}
	f.Fuzz(func(t *testing.T, raw []byte, eventType string, data []byte) {
		flt, err := Parse(raw)
		if err != nil {
			if flt != nil {
				t.Fatalf("Parse(%q): a filter with an error", raw)
			}
			return
		}
		// Random data rarely has the filter's paths: also try the filter's own "data" member, and
		// probes holding each kind of JSON value at the keys the seeds use.
		docs := []json.RawMessage{data}
		var own struct{ Data json.RawMessage }
		if json.Unmarshal(raw, &own) == nil {
			docs = append(docs, own.Data)
		}
		for _, p := range append(docs, filterProbes...) {
			if _, steps, bound := countedMatch(flt, NewDocument(eventType, p)); steps > bound {
				t.Fatalf("filter %q on %q: %d steps, bound %d", raw, p, steps, bound)
			}
		}
		if len(bytes.TrimSpace(raw)) == 0 {
			return
		}
		again := roundTripJSON(t, raw)
		if len(again) > MaxBytes {
			return
		}
		flt2, err := Parse(again)
		if err != nil {
			t.Fatalf("Parse(%q) accepted, its round trip %q refused: %v", raw, again, err)
		}
		if !reflect.DeepEqual(flt, flt2) {
			t.Fatalf("Parse(%q) and its round trip %q differ", raw, again)
		}
		if flt2.Match(NewDocument(eventType, data)) != flt.Match(NewDocument(eventType, data)) {
			t.Fatalf("round trip of %q matches %q differently", raw, data)
		}
	})
}

// longNumberEvent is an event whose data holds a 256K-digit number, and a filter comparing it.
func longNumberEvent(tb testing.TB) (*Filter, []byte) {
	tb.Helper()
	f, err := Parse([]byte(`{"data.n": {"$gt": 1e262143, "$lt": 1e262145, "$nin": [1.5, 2, 1e262144]}}`))
	require.NoError(tb, err)
	return f, []byte(`{"n": 1` + strings.Repeat("7", 1<<18) + `}`) // 1.77…e262144
}

// TestFilterLongNumber: a 256K-digit number compares exactly (it lies strictly between 1e262143
// and 1e262145, and differs from 1e262144) in time linear in its length: no arbitrary-precision
// parsing (BenchmarkFilterLongNumber).
func TestFilterLongNumber(t *testing.T) {
	t.Parallel()
	f, data := longNumberEvent(t)
	assert.True(t, f.Match(NewDocument("a", data)))
	digits := strings.Repeat("7", 4000)
	g, err := Parse([]byte(`{"data.n": {"$in": [1` + digits + `]}}`))
	require.NoError(t, err)
	assert.True(t, g.Match(NewDocument("a", []byte(`{"n": 1`+digits+`.000}`))), "the same number, spelled with a fraction")
	assert.True(t, g.Match(NewDocument("a", []byte(`{"n": 0.1`+digits+`e4001}`))), "the same number, spelled with an exponent")
	assert.False(t, g.Match(NewDocument("a", []byte(`{"n": 1`+digits+`1}`))), "one more digit")
	assert.False(t, g.Match(NewDocument("a", []byte(`{"n": 1`+digits[1:]+`8}`))), "the last digit differs")
}

func BenchmarkFilterLongNumber(b *testing.B) {
	f, data := longNumberEvent(b)
	for b.Loop() {
		f.Match(NewDocument("a", data))
	}
}
