package transform

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// DefaultCost is the bound the tests compile with (the root's default MaxTransformCost).
const testCost = 100_000

func compile(t testing.TB, expr string) *Program {
	t.Helper()
	c, err := NewCompiler(testCost)
	require.NoError(t, err)
	p, err := c.Compile(expr)
	require.NoError(t, err)
	return p
}

var event = Input{ID: "in_1", Type: "invoice.paid", Tenant: "acme", Time: time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC),
	Data: json.RawMessage(`{"id":"in_1","amount":4200,"currency":"EUR","lines":[{"sku":"a","qty":2},{"sku":"b","qty":1}]}`)}

// TestApply: an expression reshapes the data (integers stay integers), builds lists, reads the event's
// fields, and null skips.
func TestApply(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		expr string
		want string
		skip bool
	}{
		{`{"text": "Invoice " + event.data.id + " paid: " + string(event.data.amount / 100) + " " + event.data.currency}`,
			`{"text":"Invoice in_1 paid: 42 EUR"}`, false},
		{`{"total": event.data.amount + 1, "type": event.type, "tenant": event.tenant, "at": event.time}`,
			`{"at":"2026-12-06T10:00:00Z","tenant":"acme","total":4201,"type":"invoice.paid"}`, false},
		{`event.data.lines.map(l, {"sku": l.sku, "n": l.qty})`, `[{"n":2,"sku":"a"},{"n":1,"sku":"b"}]`, false},
		{`event.data.amount > 10000 ? event.data : null`, ``, true},
	} {
		o, err := compile(t, tc.expr).Apply(context.Background(), event)
		require.NoError(t, err, tc.expr)
		assert.Equal(t, tc.skip, o.Skip, tc.expr)
		if !tc.skip {
			assert.JSONEq(t, tc.want, string(o.Data), tc.expr)
		}
	}
}

// TestCompileRefuses: an expression that does not parse or type-check is refused with its line and
// column; one whose result cannot be data, or whose estimated cost is over the bound, is refused too.
func TestCompileRefuses(t *testing.T) {
	t.Parallel()
	c, err := NewCompiler(testCost)
	require.NoError(t, err)
	for _, tc := range []struct{ expr, want string }{
		{`{"n": 1 + "a"}`, "at 1:9: found no matching overload for '_+_'"},
		{`{"n": event.data.x +}`, "at 1:21: Syntax error"},
		{`"just a string"`, "gives a string"},
		{`event.data.l.map(a, event.data.l.map(b, event.data.l.map(c, a + b + c)))`, "estimated cost"},
		{``, "empty"},
		{strings.Repeat(" ", MaxLen) + "null", "bytes, at most"},
	} {
		_, err := c.Compile(tc.expr)
		require.ErrorIs(t, err, ErrInvalid, tc.expr)
		assert.Contains(t, err.Error(), tc.want, tc.expr)
	}
}

// TestCostBoundStopsEvaluation: an expression that passed the estimate but whose input makes it
// expensive stops at the cost bound, with words, promptly.
func TestCostBoundStopsEvaluation(t *testing.T) {
	t.Parallel()
	p := compile(t, `{"n": event.data.l.map(x, x * 2).size()}`) // linear: passes the estimate
	items := make([]string, 50_000)
	for i := range items {
		items[i] = fmt.Sprint(i)
	}
	in := event
	in.Data = json.RawMessage(`{"l":[` + strings.Join(items, ",") + `]}`)
	start := time.Now()
	_, err := p.Apply(context.Background(), in)
	took := time.Since(start)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "reached its cost bound")
	t.Logf("stopped after %s", took)
	small := event
	small.Data = json.RawMessage(`{"l":[1,2,3]}`)
	o, err := p.Apply(context.Background(), small)
	require.NoError(t, err, "the same program on a small event")
	assert.JSONEq(t, `{"n":3}`, string(o.Data))
}

func BenchmarkApply(b *testing.B) {
	p := compile(b, `{"text": "Invoice " + event.data.id + " paid", "amount": event.data.amount, "currency": event.data.currency}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := p.Apply(context.Background(), event); err != nil {
			b.Fatal(err)
		}
	}
}

// TestBodyReplacesTheEnvelope: body(x) makes x the whole request body; without it the result is the
// envelope's data.
func TestBodyReplacesTheEnvelope(t *testing.T) {
	t.Parallel()
	raw := []byte(`{"id":"in_1","type":"invoice.paid","timestamp":"2026-12-06T10:00:00Z","data":{"id":"in_1"}}`)
	out, skip, err := compile(t, `body({"text": "Invoice " + event.data.id})`).Reshape(context.Background(), "", raw)
	require.NoError(t, err)
	assert.False(t, skip)
	assert.JSONEq(t, `{"text":"Invoice in_1"}`, string(out))
	out, _, err = compile(t, `{"text": "Invoice " + event.data.id}`).Reshape(context.Background(), "", raw)
	require.NoError(t, err)
	assert.JSONEq(t, `{"id":"in_1","type":"invoice.paid","timestamp":"2026-12-06T10:00:00Z","data":{"text":"Invoice in_1"}}`, string(out))
}

// TestReshapeReadsAnyLayout: the body as the engine encodes it keeps its bytes but the data's; a body
// laid out otherwise (data first, a nested "data" key, spaces) is read whole, with the same result.
func TestReshapeReadsAnyLayout(t *testing.T) {
	t.Parallel()
	p := compile(t, `{"n": event.data.n, "id": event.id}`)
	const head = `{"id":"e1","type":"a.b","timestamp":"2026-12-06T10:00:00.5Z"`
	want := `{"id":"e1","type":"a.b","timestamp":"2026-12-06T10:00:00.5Z","data":{"id":"e1","n":1}}`
	for _, raw := range []string{
		head + `,"data":{"n":1,"data":{"n":2}}}`,
		`{"data":{"m":{"x":1,"data":3},"n":1},"id":"e1","type":"a.b","timestamp":"2026-12-06T10:00:00.5Z"}`,
		`{"id":"e1","data":{"n":1},"type":"a.b","timestamp":"2026-12-06T10:00:00.5Z"}`,
		"{ \"id\": \"e1\", \"type\": \"a.b\", \"timestamp\": \"2026-12-06T10:00:00.5Z\", \"data\": {\"n\": 1} }\n",
		head + `,"Data":{"n":7},"data":{"n":1}}`,       // another member decoding as data, before it
		head + `,"extra":{"secret":1},"data":{"n":1}}`, // a member the envelope does not have: dropped
	} {
		out, skip, err := p.Reshape(context.Background(), "acme", []byte(raw))
		require.NoError(t, err, raw)
		require.False(t, skip)
		assert.JSONEq(t, want, string(out), raw)
	}
	_, _, err := p.Reshape(context.Background(), "acme", []byte(`{,"data":{"n":1}}`))
	require.Error(t, err, "not JSON")
	out, _, err := p.Reshape(context.Background(), "acme", []byte(head+`,"data":{"n":1}}`))
	require.NoError(t, err)
	assert.Equal(t, want, string(out), "the engine's layout: its bytes kept")
}

// BenchmarkReshape: what an attempt pays for a 3-field transformation of a 512-byte body, from the
// envelope to the envelope sent.
func BenchmarkReshape(b *testing.B) {
	p := compile(b, `{"text": "Invoice " + event.data.id + " paid", "amount": event.data.amount, "currency": event.data.currency}`)
	raw := []byte(`{"id":"evt_1","type":"invoice.paid","timestamp":"2026-12-06T10:00:00.123456789Z","data":{"id":"in_1","amount":4200,"currency":"EUR","note":"` +
		strings.Repeat("x", 380) + `","lines":[{"sku":"a","qty":2},{"sku":"b","qty":1}]}}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := p.Reshape(context.Background(), "acme", raw); err != nil {
			b.Fatal(err)
		}
	}
}
