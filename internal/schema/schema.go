// Package schema holds event data to JSON Schemas (santhosh-tekuri/jsonschema v6) within bounds: a
// schema is checked against the bounds of limits.go and the rules of references before it is
// compiled (shape.go), loads no document it does not embed, and validates data within MaxSteps
// steps of work and the caller's context (meter.go), with an error that names the failing instance
// path and keyword and quotes at most MaxValueBytes of the data (errtext.go).
package schema

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// ErrRemoteRef is the error (wrapped) of a schema that names a document it does not hold.
var ErrRemoteRef = errors.New("a schema may not refer to another document (only $ref within it, and the standard drafts' meta-schemas)")

// ErrOverBudget is the error (wrapped) of a validation that would take more than MaxSteps.
var ErrOverBudget = errors.New("validating the data against the schema takes more work than the bound")

// ErrFailsUnplaced is the error (wrapped) of data that fails its schema where finding the failing
// place would take more than MaxSteps (the check that it fails took less).
var ErrFailsUnplaced = errors.New("fails its schema")

// refusingLoader loads no document: a $ref or $schema naming a document that is not the schema itself
// (nor a draft's meta-schema, which the validator embeds) fails the compile. No file or URL is read.
type refusingLoader struct{}

// Load refuses url.
func (refusingLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("%s: %w", url, ErrRemoteRef)
}

// printer renders the validator's messages.
var printer = message.NewPrinter(language.English)

// Schema is a compiled schema, safe for concurrent use. The validator takes no per-call state, so
// each validation runs on a compiled copy of its own whose hooks charge its meter: copies are kept for
// reuse, as many as validations ran at once, at most maxCopies.
type Schema struct {
	url      string // the schema's, and checkURL, that of {"if": {"$ref": url}, "then": true, "else": false}
	checkURL string
	doc      any               // the schema as decoded, its hooks' formats set
	shape    *shape            // its subschemas and their costs
	own      []func(any) error // per subschema, the check of its own format (nil: none)
	formats  map[string]string // hook format name → the subschema's own format name
	free     chan *compiled
	made     atomic.Int32
}

// compiled is one copy of a compiled schema and the meter its hooks charge: full validates as the
// schema says; check as {"if": schema, "then": true, "else": false}, the same verdict, which the
// validator reaches without building errors (an if's schema is evaluated for its verdict alone; an
// error's instance path costs time in the depth of the data) and stopping at the first failure.
type compiled struct {
	full, check *jsonschema.Schema
	m           *meter
}

// maxCopies bounds the compiled copies of one schema: validations beyond it at once wait for one.
var maxCopies = int32(max(4, 2*runtime.GOMAXPROCS(0)))

// hookFormat is the name of the format that runs the hook of subschema id.
func hookFormat(id int) string { return "webhooks-meter-" + strconv.Itoa(id) }

// Compile compiles raw, a JSON Schema named name: 2020-12 unless its $schema names another draft the
// validator knows (Draft 7 among them), formats asserted, no other document loaded. It refuses, before
// compiling, a schema over the bounds of limits.go, a $ref that is not a JSON pointer to a subschema
// of this schema, $id below the top, $dynamicRef and $recursiveRef, and a cycle of references that
// does not descend into the data.
func Compile(name string, raw []byte) (*Schema, error) {
	if err := checkText(raw); err != nil {
		return nil, err
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("schema is not JSON: %w", err)
	}
	sh, err := readShape(doc)
	if err != nil {
		return nil, err
	}
	s := &Schema{url: "urn:webhooks:event-type:" + name, checkURL: "urn:webhooks:check:" + name, doc: doc, shape: sh, own: make([]func(any) error, len(sh.nodes)),
		formats: map[string]string{}, free: make(chan *compiled, maxCopies)}
	for _, n := range sh.nodes {
		if n.obj == nil {
			continue
		}
		if f, isSet := n.obj["format"]; isSet {
			if _, ok := f.(string); !ok {
				continue // the validator refuses it when it compiles
			}
		}
		if n.format != "" {
			s.own[n.id] = ownFormat(n.format)
			s.formats[hookFormat(n.id)] = n.format
		}
		n.obj["format"] = hookFormat(n.id)
	}
	first, err := s.compile()
	if err != nil {
		return nil, err
	}
	s.made.Store(1)
	s.free <- first
	return s, nil
}

// compile makes a copy of s.
func (s *Schema) compile() (*compiled, error) {
	m := &meter{}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	c.UseLoader(refusingLoader{})
	for _, n := range s.shape.nodes {
		if n.obj == nil {
			continue
		}
		cost, own := &n.cost, s.own[n.id]
		c.RegisterFormat(&jsonschema.Format{Name: hookFormat(n.id), Validate: func(v any) error { return m.visit(cost, own, v) }})
	}
	if err := c.AddResource(s.url, s.doc); err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	full, err := c.Compile(s.url)
	if err != nil {
		return nil, compileError(err)
	}
	if err := c.AddResource(s.checkURL, map[string]any{"if": map[string]any{"$ref": s.url}, "then": true, "else": false}); err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	check, err := c.Compile(s.checkURL)
	if err != nil {
		return nil, compileError(err)
	}
	return &compiled{full: full, check: check, m: m}, nil
}

// take returns a copy of s for one validation: a free one, else a new one while fewer than maxCopies
// exist, else the first one freed (or ctx's error).
func (s *Schema) take(ctx context.Context) (*compiled, error) {
	select {
	case c := <-s.free:
		return c, nil
	default:
	}
	if s.made.Add(1) <= maxCopies {
		c, err := s.compile()
		if err != nil {
			s.made.Add(-1)
			return nil, err
		}
		return c, nil
	}
	s.made.Add(-1)
	select {
	case c := <-s.free:
		return c, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("schema: wait for a validator: %w", ctx.Err())
	}
}

// Validate checks data (JSON) against the schema, within MaxSteps steps and ctx. A failure is a
// *Error naming the first failing instance path and keyword; data no schema can vouch for is a
// *DataError; a validation over MaxSteps wraps ErrOverBudget; one whose ctx ended wraps ctx.Err().
func (s *Schema) Validate(ctx context.Context, data []byte) error {
	_, err := s.validate(ctx, data)
	return err
}

// errorScale is the factor of the charges of the validation that builds errors, in data nested
// depth deep: each error copies its instance path.
func errorScale(depth int) int64 { return 1 + int64(depth)/8 }

// validate is Validate, also returning the steps it took (MaxSteps at most, decoding included). It
// checks the data first (compiled.check); only data that fails is validated again, with the steps
// left, building the errors that say where.
func (s *Schema) validate(ctx context.Context, data []byte) (int64, error) {
	inst, depth, steps, err := decodeData(data, MaxSteps)
	if errors.Is(err, errDecode) {
		if depth, steps, err = checkStrict(data, MaxSteps); err == nil {
			if inst, err = jsonschema.UnmarshalJSON(bytes.NewReader(data)); err != nil {
				return steps, fmt.Errorf("data is not JSON: %w", err)
			}
		}
	}
	if err != nil {
		return steps, s.stopped(ctx, err, err)
	}
	c, err := s.take(ctx)
	if err != nil {
		return steps, err
	}
	defer func() { s.free <- c }() // never blocks: at most maxCopies exist
	*c.m = meter{ctx: ctx, left: MaxSteps - steps, scale: 1}
	err = c.check.Validate(inst)
	steps = MaxSteps - c.m.left
	if err == nil || c.m.err != nil {
		return steps, s.stopped(ctx, c.m.err, err)
	}
	*c.m = meter{ctx: ctx, left: MaxSteps - steps, scale: errorScale(depth)} // what the check left
	err = c.full.Validate(inst)
	steps = MaxSteps - c.m.left
	var ve *jsonschema.ValidationError
	switch {
	case c.m.err == errOverBudget:
		return steps, fmt.Errorf("%w; finding where would take more than %d steps of work (docs/security.md), so the place is not named",
			ErrFailsUnplaced, MaxSteps)
	case c.m.err != nil:
		return steps, s.stopped(ctx, c.m.err, err)
	case errors.As(err, &ve):
		return steps, failure(ve, s.formats)
	}
	return steps, err
}

// stopped is the error of a validation whose meter says why it stopped (nil: it did not), else err.
func (s *Schema) stopped(ctx context.Context, why, err error) error {
	switch why {
	case errOverBudget:
		return fmt.Errorf("%w: more than %d steps (docs/security.md); simplify the schema (fewer nested $ref, allOf, anyOf, oneOf; shorter patterns) or send less data",
			ErrOverBudget, MaxSteps)
	case errCanceled:
		return fmt.Errorf("schema: validation stopped: %w", context.Cause(ctx))
	}
	return err
}

// ownFormats caches the validator's check of each format name (nil: a name it does not know, which it
// ignores). Bounded: a name it does not know is not kept once it holds maxOwnFormats.
var ownFormats sync.Map

const maxOwnFormats = 256

var ownFormatCount atomic.Int32

// ownFormat is the validator's check of the format named name, nil when it knows none: it compiles
// {"format": name} and takes what the validator made of it.
func ownFormat(name string) func(any) error {
	if f, ok := ownFormats.Load(name); ok {
		return f.(func(any) error)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	c.UseLoader(refusingLoader{})
	var check func(any) error
	if c.AddResource("urn:webhooks:format", map[string]any{"format": name}) == nil {
		if sch, err := c.Compile("urn:webhooks:format"); err == nil && sch.Format != nil {
			check = sch.Format.Validate
		}
	}
	if check != nil || ownFormatCount.Load() < maxOwnFormats {
		if _, loaded := ownFormats.LoadOrStore(name, check); !loaded {
			ownFormatCount.Add(1)
		}
	}
	return check
}
