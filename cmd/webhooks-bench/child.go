package main

// The rows run as child processes: the same program (./child) built against the library of this tree
// and against the last v1 commit, so that one interleaved run shows a regression against v1.

import (
	"archive/tar"
	"bytes"
	"context"
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// childSource is the child program and the package it shares with this one, copied into the module
// built against v1.
//
//go:embed child/*.go internal/e2e/*.go
var childSource embed.FS

// buildChildren builds the child program against this tree (in place: this command must run inside
// its module) and, unless v1 is "", against v1: a directory holding that version of the module, or a
// git revision of the repository this command runs in, extracted with git archive. It returns the
// paths of the binaries.
func buildChildren(ctx context.Context, tmp, v1 string) (current, old string, err error) {
	current = filepath.Join(tmp, "child-current")
	if err := goCommand(ctx, ".", "build", "-o", current, "github.com/smartdrop/webhooks/cmd/webhooks-bench/child"); err != nil {
		return "", "", fmt.Errorf("building the child program against this tree (run webhooks-bench inside its module): %w", err)
	}
	if v1 == "" {
		return current, "", nil
	}
	src := v1
	if st, err := os.Stat(v1); err != nil || !st.IsDir() {
		src = filepath.Join(tmp, "v1-src")
		if err := gitArchive(ctx, v1, src); err != nil {
			return "", "", fmt.Errorf("-v1 %s: not a directory, and git archive failed: %w", v1, err)
		}
	}
	if src, err = filepath.Abs(src); err != nil {
		return "", "", err
	}
	mod := filepath.Join(tmp, "v1-bench")
	if err := writeChildModule(mod, src); err != nil {
		return "", "", err
	}
	old = filepath.Join(tmp, "child-v1")
	if err := goCommand(ctx, mod, "build", "-mod=mod", "-o", old, "./child"); err != nil {
		return "", "", fmt.Errorf("building the child program against %s: %w", src, err)
	}
	return current, old, nil
}

// writeChildModule writes, in dir, a module holding childSource whose library is replaced by src.
// Its path is that of this command, so the child's imports resolve as they do here.
func writeChildModule(dir, src string) error {
	err := fs.WalkDir(childSource, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := childSource.ReadFile(path)
		if err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(path)), 0o755); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dir, path), b, 0o644)
	})
	if err != nil {
		return err
	}
	gomod := fmt.Sprintf("module github.com/smartdrop/webhooks/cmd/webhooks-bench\n\ngo 1.26.0\n\n"+
		"require (\n\tgithub.com/redis/go-redis/v9 v9.23.0\n\tgithub.com/smartdrop/webhooks v0.0.0\n)\n\n"+
		"replace github.com/smartdrop/webhooks => %s\n", src)
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(gomod), 0o644); err != nil {
		return err
	}
	sum, err := os.ReadFile(filepath.Join(src, "go.sum"))
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "go.sum"), sum, 0o644)
}

func goCommand(ctx context.Context, dir string, args ...string) error {
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return nil
}

// gitArchive extracts the tree of rev into dir.
func gitArchive(ctx context.Context, rev, dir string) error {
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, "git", "archive", "--format=tar", rev)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("%w: %s", err, stderr.String())
	}
	tr := tar.NewReader(bytes.NewReader(out))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		name := filepath.Join(dir, filepath.FromSlash(h.Name))
		if !strings.HasPrefix(name, filepath.Clean(dir)+string(os.PathSeparator)) {
			continue
		}
		switch h.Typeflag {
		case tar.TypeDir:
			err = os.MkdirAll(name, 0o755)
		case tar.TypeReg:
			if err = os.MkdirAll(filepath.Dir(name), 0o755); err == nil {
				var b []byte
				if b, err = io.ReadAll(tr); err == nil {
					err = os.WriteFile(name, b, 0o644)
				}
			}
		}
		if err != nil {
			return err
		}
	}
}
