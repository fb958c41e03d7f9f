package webhooks

// Webhook.Transform: the CEL transformation of what is sent to one webhook (internal/transform), and
// PreviewTransform.

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/smartdrop/webhooks/internal/transform"
)

// transforms compiles and runs webhooks' transformations. Its compiler is made on first use, so a
// Dispatcher whose webhooks set none builds no CEL environment and pays nothing per attempt.
type transforms struct {
	maxCost uint64
	once    sync.Once
	c       *transform.Compiler
	err     error
}

// compile returns the program of expr, its error wrapping ErrInvalidWebhook.
func (t *transforms) compile(expr string) (*transform.Program, error) {
	t.once.Do(func() { t.c, t.err = transform.NewCompiler(t.maxCost) })
	if t.err != nil {
		return nil, t.err
	}
	p, err := t.c.Compile(expr)
	if err != nil {
		return nil, fmt.Errorf("%w: transform: %w", ErrInvalidWebhook, err)
	}
	return p, nil
}

// reshape is the body an attempt sends to wh: body itself when wh has no transformation, else the body
// with its transformation's result as data, or skip. An error says why the transformation failed.
func (t *transforms) reshape(ctx context.Context, wh *storedWebhook, body []byte) ([]byte, bool, error) {
	if wh.Transform == "" {
		return body, false, nil
	}
	p, err := t.compile(wh.Transform)
	if err != nil {
		return nil, false, err
	}
	return p.Reshape(ctx, wh.Tenant, body)
}

// PreviewTransform runs a transformation on an event as an attempt would, without sending anything:
// it returns the data the webhook would receive (the whole body, for an expression that gives
// body(x)), or JSON null when the transformation skips the event.
// An expression that does not compile (wrapping ErrInvalidWebhook, naming its line and column) or that
// fails on this event returns an error in words. The event is checked as Dispatch checks it (its type's
// schema included).
func (d *Dispatcher) PreviewTransform(ctx context.Context, expr string, evt Event) (json.RawMessage, error) {
	p, err := d.transforms.compile(expr)
	if err != nil {
		return nil, err
	}
	body, err := d.events.Check(ctx, evt, false)
	if err != nil {
		return nil, err
	}
	o, err := p.Apply(ctx, transform.InputOf(evt.Tenant, body))
	switch {
	case err != nil:
		return nil, err
	case o.Skip:
		return json.RawMessage("null"), nil
	case o.Body != nil:
		return o.Body, nil
	}
	return o.Data, nil
}
