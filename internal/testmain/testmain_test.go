package testmain

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMain(m *testing.M) { Run(m) }

// TestEveryTestBinaryEndsThroughRun: every directory of the repository (the root module and its
// nested modules) with tests has a TestMain that ends through Run or Exit, so no test binary of
// `go test -race ./...` sleeps the race detector's second on its way out.
func TestEveryTestBinaryEndsThroughRun(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	require.NoError(t, err)
	dirs := 0
	err = filepath.WalkDir(root, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !e.IsDir() {
			return nil
		}
		name := e.Name()
		if path != root && (name == "testdata" || name == "node_modules" || strings.HasPrefix(name, ".")) {
			return filepath.SkipDir
		}
		tests, err := filepath.Glob(filepath.Join(path, "*_test.go"))
		if err != nil || len(tests) == 0 {
			return err
		}
		dirs++
		for _, f := range tests {
			b, err := os.ReadFile(f)
			if err != nil {
				return err
			}
			s := string(b)
			ends := strings.Contains(s, "testmain.Run(m)") || strings.Contains(s, "testmain.Exit(") ||
				strings.Contains(s, "{ Run(m) }") // this package's own
			if ends && strings.Contains(s, "func TestMain(") {
				return nil
			}
		}
		rel, _ := filepath.Rel(root, path)
		t.Errorf("%s has tests but no TestMain ending through testmain.Run (or testmain.Exit): "+
			"add func TestMain(m *testing.M) { testmain.Run(m) }", rel)
		return nil
	})
	require.NoError(t, err)
	assert.Greater(t, dirs, 30, "the walk found the repository's test packages")
}
