package eventtypes

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smartdrop/webhooks/internal/schema"
)

// TestValidatorWaitsWithinItsContext: while one caller compiles a type's schema, another that needs
// it waits at most until its own context ends, and fails with the context's error (issue 43, finding
// 2: another Dispatcher's Dispatch waited 52.6 s on a shared compile, past its 200 ms context); once
// the compile ends, every caller gets its schema, compiled once. Broken by waiting without the
// context (sync.Once: the second caller is still waiting when the compile is released).
func TestValidatorWaitsWithinItsContext(t *testing.T) {
	t.Parallel()
	release, started := make(chan struct{}), make(chan struct{})
	compiles := 0
	e := newEntry("a.b", `{"name": "a.b", "schema": {"type": "object"}}`)
	e.compile = func(name string, raw []byte) (*schema.Schema, error) {
		compiles++
		close(started)
		<-release
		return schema.Compile(name, raw)
	}
	first := make(chan error, 1)
	go func() {
		_, err := e.Validator(context.Background())
		first <- err
	}()
	<-started
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, err := e.Validator(ctx)
	require.ErrorIs(t, err, context.DeadlineExceeded, "the second caller gives up with its context")
	assert.Contains(t, err.Error(), "wait for the schema of a.b to compile")
	close(release)
	require.NoError(t, <-first)
	v, err := e.Validator(context.Background())
	require.NoError(t, err)
	require.NotNil(t, v)
	assert.NoError(t, v.Validate(context.Background(), []byte(`{}`)))
	assert.Equal(t, 1, compiles, "compiled once")
}
