package worker

import (
	"context"
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDeliveryPathKnowsNoHTTP: the packages that lease, attempt, decide, count and record deliveries
// know a destination's result, not HTTP: none imports net/http (HTTP is one destination,
// internal/httpdest, behind destination.Destination).
func TestDeliveryPathKnowsNoHTTP(t *testing.T) {
	t.Parallel()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const base = "github.com/smartdrop/webhooks/internal/"
	pkgs := []string{"worker", "breaker", "rdb", "ratelimit", "notify", "replay", "events", "schema", "index", "filter"}
	args := []string{"list", "-f", `{{.ImportPath}} {{join .Imports " "}}`}
	for _, p := range pkgs {
		args = append(args, base+p)
	}
	out, err := exec.CommandContext(ctx, goTool, args...).Output()
	if exitErr := (*exec.ExitError)(nil); errors.As(err, &exitErr) {
		t.Fatalf("go list: %v\n%s", err, exitErr.Stderr)
	}
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	require.Len(t, lines, len(pkgs), "go list listed every package")
	for _, line := range lines {
		fields := strings.Fields(line)
		assert.NotContains(t, fields[1:], "net/http", "%s imports net/http", fields[0])
	}
}
