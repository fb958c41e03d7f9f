package verify

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

const importPath = "github.com/smartdrop/webhooks/verify"

// TestImportsOnlyStandardLibrary: every package the verify package depends on, however indirectly, is
// of the standard library (whose import paths have no dot in their first element), so a receiver that
// imports it takes on nothing else. Test files do not count: they are not built into a receiver.
func TestImportsOnlyStandardLibrary(t *testing.T) {
	t.Parallel()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, goTool, "list", "-deps", importPath).Output()
	if exitErr := (*exec.ExitError)(nil); errors.As(err, &exitErr) {
		t.Fatalf("go list -deps %s: %v\n%s", importPath, err, exitErr.Stderr)
	}
	require.NoError(t, err)

	deps := strings.Fields(string(out))
	require.Contains(t, deps, importPath, "go list listed another package")
	require.Contains(t, deps, "crypto/ed25519", "go list listed the dependencies")
	var notStd []string
	for _, dep := range deps {
		if dep == importPath {
			continue
		}
		if first, _, _ := strings.Cut(dep, "/"); strings.Contains(first, ".") {
			notStd = append(notStd, dep)
		}
	}
	assert.Empty(t, notStd, "the verify package must import the standard library only")
}
