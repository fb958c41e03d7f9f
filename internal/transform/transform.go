// Package transform runs a webhook's transformation: a CEL expression over the event that reshapes its
// data or skips it. CEL is sandboxed (no I/O, no clock, no loop without an end) and has a cost model:
// an expression is compiled and type-checked when its webhook is saved, refused when its estimated cost
// for inputs of EstimateItems items is over the bound, and each evaluation stops at the bound (the
// actual cost), so no stored expression can take more than its bound per event.
package transform

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/cost"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/common/types/traits"
	"cel.dev/cel-go/interpreter"

	"github.com/smartdrop/webhooks/internal/schema"
)

const (
	// MaxLen bounds an expression, in bytes.
	MaxLen = 4096
	// EstimateItems is how many items (list elements, map entries, bytes of a string) the cost
	// estimate at save assumes of every value of the event: an expression whose cost grows faster
	// than its input (a comprehension nested in another) is refused, one that reads or walks its
	// input once is not. The actual cost is bounded at every evaluation, whatever the input.
	EstimateItems = 100
	// maxPrograms bounds the compiled programs a Compiler keeps; beyond it they are compiled again.
	maxPrograms = 1024
)

// bodyKey marks the result of body(x): x is the whole request body, not the envelope's data.
const bodyKey = "\x00body"

// ErrInvalid is wrapped by Compile's errors: an expression that does not compile, or whose estimated
// cost is over the bound.
var ErrInvalid = errors.New("invalid transformation")

// Input is what an expression reads as `event`.
type Input struct {
	ID, Type, Tenant string
	Time             time.Time
	Data             json.RawMessage
}

// Compiler compiles expressions, and keeps the programs it compiled, by expression. Safe for
// concurrent use.
type Compiler struct {
	env     *cel.Env
	maxCost uint64

	mu       sync.Mutex
	programs map[string]*Program
}

// NewCompiler returns a Compiler of expressions whose cost per evaluation is at most maxCost (CEL
// cost units).
func NewCompiler(maxCost uint64) (*Compiler, error) {
	env, err := cel.NewEnv(cel.Variable("event", cel.MapType(cel.StringType, cel.DynType)),
		cel.Function("body", cel.Overload("body_dyn", []*cel.Type{cel.DynType}, cel.MapType(cel.StringType, cel.DynType),
			cel.UnaryBinding(func(v ref.Val) ref.Val {
				return types.DefaultTypeAdapter.NativeToValue(map[string]ref.Val{bodyKey: v})
			}))))
	if err != nil {
		return nil, fmt.Errorf("webhooks: transformations: %w", err)
	}
	return &Compiler{env: env, maxCost: maxCost, programs: map[string]*Program{}}, nil
}

// Program is a compiled expression.
type Program struct {
	expr string
	prg  cel.Program
}

// Compile returns the program of expr, compiled now or kept from an earlier call. Its error wraps
// ErrInvalid and says where the expression is wrong ("at 1:12: …") or that its cost is too high.
func (c *Compiler) Compile(expr string) (*Program, error) {
	c.mu.Lock()
	p, ok := c.programs[expr]
	c.mu.Unlock()
	if ok {
		return p, nil
	}
	p, err := c.compile(expr)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if len(c.programs) >= maxPrograms {
		clear(c.programs)
	}
	c.programs[expr] = p
	c.mu.Unlock()
	return p, nil
}

func (c *Compiler) compile(expr string) (*Program, error) {
	if strings.TrimSpace(expr) == "" {
		return nil, fmt.Errorf("%w: the expression is empty", ErrInvalid)
	}
	if len(expr) > MaxLen {
		return nil, fmt.Errorf("%w: the expression is %d bytes, at most %d", ErrInvalid, len(expr), MaxLen)
	}
	ast, iss := c.env.Compile(expr)
	if iss != nil && iss.Err() != nil {
		return nil, fmt.Errorf("%w: %s", ErrInvalid, issueWords(iss))
	}
	if t := ast.OutputType(); !resultType(t) {
		return nil, fmt.Errorf("%w: the expression gives a %s: it must give a map (the new data), a list, or null (skip the event)",
			ErrInvalid, t)
	}
	est, err := c.env.EstimateCost(ast, estimator{})
	if err != nil {
		return nil, fmt.Errorf("%w: its cost cannot be estimated: %w", ErrInvalid, err)
	}
	if est.Max > c.maxCost {
		return nil, fmt.Errorf("%w: its estimated cost for an event whose lists and strings hold %d items is %d, over the bound of %d (Options.MaxTransformCost): it grows too fast with its input; avoid a comprehension inside another",
			ErrInvalid, EstimateItems, est.Max, c.maxCost)
	}
	prg, err := c.env.Program(ast, cel.CostLimit(c.maxCost), cel.InterruptCheckFrequency(100))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return &Program{expr: expr, prg: prg}, nil
}

// resultType reports whether an expression's checked type can be a transformation's result.
func resultType(t *types.Type) bool {
	switch t.Kind() {
	case types.MapKind, types.ListKind, types.NullTypeKind, types.DynKind, types.AnyKind:
		return true
	}
	return false
}

// issueWords is a compile error in words: each issue with its line and column.
func issueWords(iss *cel.Issues) string {
	var b strings.Builder
	for i, e := range iss.Errors() {
		if i > 0 {
			b.WriteString("; ")
		}
		loc := e.Location
		fmt.Fprintf(&b, "at %d:%d: %s", loc.Line(), loc.Column()+1, e.Message)
	}
	return b.String()
}

// estimator sizes every value of the event, and every value computed from one whose size CEL does not
// derive, at EstimateItems (estimate only).
type estimator struct{}

func (estimator) EstimateSize(n cost.AstNode) *cost.SizeEstimate {
	if n.ComputedSize() != nil {
		return nil // a literal, or derived from its operands' sizes
	}
	return &cost.SizeEstimate{Min: 0, Max: EstimateItems}
}

func (estimator) EstimateCallCost(string, string, *cost.AstNode, []cost.AstNode) *cost.CallEstimate {
	return nil
}

// Output is what a program makes of an event.
type Output struct {
	// Data is the new data (a JSON object or array); nil when Body is set or the event is skipped.
	Data json.RawMessage
	// Body is set when the expression gave body(x): x is the whole request body, sent as it is
	// instead of the Standard Webhooks envelope (for a receiver that wants its own shape at the top,
	// such as a chat's incoming webhook).
	Body json.RawMessage
	// Skip is set when the expression gave null.
	Skip bool
}

// Apply runs the program on an event: the new data, the whole body (body(x)), or skip when the
// expression gives null. A runtime error (a missing key, a type mismatch, the cost bound reached, ctx
// ended) is returned in words.
func (p *Program) Apply(ctx context.Context, in Input) (Output, error) {
	var data any
	if len(in.Data) > 0 {
		var err error
		if data, err = decodeData(in.Data); err != nil {
			return Output{}, err
		}
	}
	return p.eval(ctx, in, timeText(in.Time), data)
}

// timeText is an event's time as a program sees it, event.time.
func timeText(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// eval is Apply on the event's data decoded, its time as text (timeText).
func (p *Program) eval(ctx context.Context, in Input, ts string, data any) (Output, error) {
	event := map[string]any{"id": in.ID, "type": in.Type, "tenant": in.Tenant, "time": ts, "data": data}
	out, det, err := p.prg.ContextEval(ctx, activation{event})
	if err != nil {
		if det != nil && det.ActualCost() != nil && strings.Contains(err.Error(), "cost limit") {
			return Output{}, fmt.Errorf("the transformation reached its cost bound (Options.MaxTransformCost) on this event: %w", err)
		}
		return Output{}, fmt.Errorf("the transformation failed on this event: %w", err)
	}
	if out == types.NullValue {
		return Output{Skip: true}, nil
	}
	whole := false
	if m, ok := out.(traits.Mapper); ok && m.Size() == types.Int(1) {
		if b, found := m.Find(types.String(bodyKey)); found {
			out, whole = b, true
		}
	}
	switch out.(type) {
	case traits.Mapper, traits.Lister:
	default:
		return Output{}, fmt.Errorf("the transformation gave a %s: it must give a map (the new data), a list, body(a map or a list) or null (skip the event)", out.Type())
	}
	b, err := appendJSON(nil, out, 0)
	if err != nil {
		return Output{}, fmt.Errorf("the transformation's result: %w", err)
	}
	if whole {
		return Output{Body: b}, nil
	}
	return Output{Data: b}, nil
}

// activation binds the expression's one variable, event.
type activation struct{ event map[string]any }

func (a activation) ResolveName(name string) (any, bool) {
	if name == "event" {
		return a.event, true
	}
	return nil, false
}

func (activation) Parent() interpreter.Activation { return nil }

// decodeData decodes an event's data, its numbers as int64 when integral and in range, else float64
// (so that `event.data.amount + 1` is integer arithmetic): by schema.DecodeNative's one pass over the
// bytes, or by encoding/json what that does not take.
func decodeData(raw []byte) (any, error) {
	if data, ok := schema.DecodeNative(raw); ok {
		return data, nil
	}
	var data any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&data); err != nil {
		return nil, fmt.Errorf("the event's data is not JSON: %w", err)
	}
	return numbers(data), nil
}

// numbers turns the json.Numbers of decoded JSON into int64 when integral and in range, else float64.
func numbers(v any) any {
	switch v := v.(type) {
	case json.Number:
		if i, err := v.Int64(); err == nil {
			return i
		}
		f, _ := v.Float64()
		return f
	case map[string]any:
		for k, e := range v {
			v[k] = numbers(e)
		}
	case []any:
		for i, e := range v {
			v[i] = numbers(e)
		}
	}
	return v
}

// maxDepth bounds the nesting of a result.
const maxDepth = 64

// appendJSON appends v as JSON, as encoding/json encodes the Go value it stands for: maps with
// string keys (in key order), lists, numbers, strings, booleans, null; bytes as base64, timestamps as
// RFC 3339, durations as Go durations.
func appendJSON(b []byte, v ref.Val, depth int) ([]byte, error) {
	if depth > maxDepth {
		return nil, fmt.Errorf("nested more than %d deep", maxDepth)
	}
	switch v := v.(type) {
	case types.Null:
		return append(b, "null"...), nil
	case types.Bool:
		return strconv.AppendBool(b, bool(v)), nil
	case types.Int:
		return strconv.AppendInt(b, int64(v), 10), nil
	case types.Uint:
		return strconv.AppendUint(b, uint64(v), 10), nil
	case types.Double:
		f := float64(v)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, errors.New("a number that JSON cannot hold (NaN or infinity)")
		}
		return appendFloat(b, f), nil
	case types.String:
		return appendString(b, string(v)), nil
	case types.Bytes:
		b = append(b, '"')
		b = base64.StdEncoding.AppendEncode(b, v)
		return append(b, '"'), nil
	case types.Timestamp:
		return appendString(b, v.Time.UTC().Format(time.RFC3339Nano)), nil
	case types.Duration:
		return appendString(b, v.Duration.String()), nil
	case traits.Mapper:
		type entry struct {
			key string
			val ref.Val
		}
		n, _ := v.Size().(types.Int)
		entries := make([]entry, 0, int(n))
		it := v.Iterator()
		for it.HasNext() == types.True {
			k := it.Next()
			ks, ok := k.(types.String)
			if !ok {
				return nil, fmt.Errorf("a map key of type %s: JSON keys are strings", k.Type())
			}
			entries = append(entries, entry{string(ks), v.Get(k)})
		}
		slices.SortFunc(entries, func(x, y entry) int { return strings.Compare(x.key, y.key) })
		b = append(b, '{')
		for i, e := range entries {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(appendString(b, e.key), ':')
			var err error
			if b, err = appendJSON(b, e.val, depth+1); err != nil {
				return nil, err
			}
		}
		return append(b, '}'), nil
	case traits.Lister:
		b = append(b, '[')
		it := v.Iterator()
		for i := 0; it.HasNext() == types.True; i++ {
			if i > 0 {
				b = append(b, ',')
			}
			var err error
			if b, err = appendJSON(b, it.Next(), depth+1); err != nil {
				return nil, err
			}
		}
		return append(b, ']'), nil
	}
	return nil, fmt.Errorf("a value of type %s that JSON cannot hold", v.Type())
}

// appendFloat appends f as encoding/json does: the shortest decimal that reads back as f, in
// exponent form below 1e-6 and from 1e21, its exponent without a leading zero (1e-7, not 1e-07).
func appendFloat(b []byte, f float64) []byte {
	format := byte('f')
	if a := math.Abs(f); a != 0 && (a < 1e-6 || a >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' { // e-07 -> e-7
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

// appendString appends s as a JSON string, escaped as encoding/json escapes it: quotes, backslashes
// and control characters; <, > and & (HTML safe); U+2028 and U+2029; invalid UTF-8 as U+FFFD.
func appendString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(append(b, s[start:i]...), `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(append(b, s[start:i]...), '\\', 'u', '2', '0', '2', hex[r&0xf])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	return append(append(b, s[start:]...), '"')
}

// body is a request body as the engine encodes it (Standard Webhooks).
type body struct {
	ID        string          `json:"id"`
	Type      string          `json:"type"`
	Timestamp time.Time       `json:"timestamp"`
	Data      json.RawMessage `json:"data"`
}

// InputOf is the input of an event of tenant whose request body is raw (an invalid body gives an empty
// input: the engine encoded it).
func InputOf(tenant string, raw []byte) Input {
	var b body
	_ = json.Unmarshal(raw, &b)
	return Input{ID: b.ID, Type: b.Type, Tenant: tenant, Time: b.Timestamp, Data: b.Data}
}

// Reshape runs the program on a request body {"id","type","timestamp","data"} of an event of tenant:
// it returns the body with the program's result as its data (or the program's body(x)), or skip.
// A body as the engine encodes it keeps its bytes but the data's, read in one pass; any other is read
// whole by encoding/json, with the same result.
func (p *Program) Reshape(ctx context.Context, tenant string, raw []byte) (out []byte, skip bool, err error) {
	in := Input{Tenant: tenant}
	var data any
	var ts string
	head, rawData, ok := splitData(raw)
	if ok {
		ts, ok = readHead(head, &in)
	}
	if ok {
		data, ok = schema.DecodeNative(rawData)
	}
	if !ok {
		var b body
		if err := json.Unmarshal(raw, &b); err != nil {
			return nil, false, fmt.Errorf("the event's body is not JSON: %w", err)
		}
		in, ts = Input{ID: b.ID, Type: b.Type, Tenant: tenant, Time: b.Timestamp}, timeText(b.Timestamp)
		if len(b.Data) > 0 {
			if data, err = decodeData(b.Data); err != nil {
				return nil, false, err
			}
		}
	}
	o, err := p.eval(ctx, in, ts, data)
	switch {
	case err != nil || o.Skip:
		return nil, o.Skip, err
	case o.Body != nil:
		return o.Body, false, nil
	case ok:
		out = make([]byte, 0, len(head)+len(dataKey)+len(o.Data)+1)
		return append(append(append(append(out, head...), dataKey...), o.Data...), '}'), false, nil
	}
	out, err = json.Marshal(body{ID: in.ID, Type: in.Type, Timestamp: in.Time, Data: o.Data})
	return out, false, err
}

// dataKey precedes the data of a body as the engine encodes it, last of its members.
const dataKey = `,"data":`

// splitData splits a body the engine encoded, {"id":…,"type":…,"timestamp":…,"data":…}, into what
// precedes its data and the data, without reading either: inside a JSON string every quote is
// escaped, so the first dataKey is a key, and the body's own when what precedes it is the envelope's
// head (readHead) and what follows it one value (the caller checks both). ok is false for any other
// layout.
func splitData(raw []byte) (head, data []byte, ok bool) {
	i := bytes.Index(raw, []byte(dataKey))
	if i < 0 || len(raw) < i+len(dataKey)+1 || raw[len(raw)-1] != '}' {
		return nil, nil, false
	}
	return raw[:i], raw[i+len(dataKey) : len(raw)-1], true
}

// readHead reads a body's head as the engine encodes it, {"id":"…","type":"…","timestamp":"…" and
// nothing else, into in: false for any other (another order, another member, a string that
// encoding/json would write otherwise, an id "", a timestamp not in its form), which the caller
// reads whole. So the head's bytes are those encoding/json writes for what it holds, and ts, the
// timestamp's text, is in.Time's timeText.
func readHead(head []byte, in *Input) (ts string, ok bool) {
	for _, f := range []struct {
		key string
		to  *string
	}{{`{"id":`, &in.ID}, {`,"type":`, &in.Type}, {`,"timestamp":`, &ts}} {
		if !bytes.HasPrefix(head, []byte(f.key)) {
			return "", false
		}
		head = head[len(f.key):]
		v, n := plainString(head)
		if n == 0 {
			return "", false
		}
		*f.to, head = v, head[n:]
	}
	return ts, len(head) == 0 && in.ID != "" && in.Time.UnmarshalText([]byte(ts)) == nil &&
		in.Time.Location() == time.UTC && timeText(in.Time) == ts
}

// plainString reads the JSON string b starts with when encoding/json writes its text so: valid
// UTF-8 with nothing it escapes (no backslash, control character, <, >, &, U+2028 or U+2029). It
// returns the text and its length quotes included, or 0.
func plainString(b []byte) (string, int) {
	if len(b) == 0 || b[0] != '"' {
		return "", 0
	}
	for i := 1; i < len(b); i++ {
		switch c := b[i]; {
		case c == '"':
			s := b[1:i]
			if !utf8.Valid(s) || bytes.Contains(s, []byte("\u2028")) || bytes.Contains(s, []byte("\u2029")) {
				return "", 0
			}
			return string(s), i + 1
		case c == '\\' || c < 0x20 || c == '<' || c == '>' || c == '&':
			return "", 0
		}
	}
	return "", 0
}
