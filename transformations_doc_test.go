package webhooks

import (
	"context"
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTransformationExamples: every example of docs/transformations.md gives the result it shows, on
// the event data it shows, through PreviewTransform (as an attempt would reshape it).
func TestTransformationExamples(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("docs/transformations.md")
	require.NoError(t, err)
	_, examples, ok := strings.Cut(string(doc), "\n## Examples\n")
	require.True(t, ok, "the doc has its Examples section")
	block := regexp.MustCompile("(?s)```(cel|json)\n(.*?)```")
	d := newTestDispatcher(t, newTestRedis(t), Options{})
	sections := strings.Split(examples, "\n### ")[1:]
	require.Len(t, sections, 5, "five worked examples")
	for _, sec := range sections {
		name, _, _ := strings.Cut(sec, "\n")
		blocks := block.FindAllStringSubmatch(sec, -1)
		require.Len(t, blocks, 3, "%s: an expression, the event data and the result", name)
		expr, data, want := blocks[0][2], blocks[1][2], blocks[2][2]
		got, err := d.PreviewTransform(context.Background(), expr, Event{ID: "evt_1", Type: "alert.raised", Data: json.RawMessage(data)})
		require.NoError(t, err, name)
		assert.JSONEq(t, want, string(got), name)
	}
}
