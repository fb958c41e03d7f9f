package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// snippets are README.md's client snippets: the fenced block after each "<!-- snippet: NAME -->".
func snippets(t *testing.T) map[string]string {
	b, err := os.ReadFile("README.md")
	require.NoError(t, err)
	re := regexp.MustCompile("(?s)<!-- snippet: (\\w+) -->\\s*```\\w+\\n(.*?)```")
	out := map[string]string{}
	for _, m := range re.FindAllStringSubmatch(string(b), -1) {
		out[m[1]] = m[2]
	}
	return out
}

// TestReadmeSnippets runs README.md's client snippets (curl, Python with requests, Node with fetch)
// against the binary, each twice: the first time their events are new and delivered, the second
// time duplicates, delivered no more. A snippet whose interpreter is missing is skipped.
func TestReadmeSnippets(t *testing.T) {
	t.Parallel()
	all := snippets(t)
	require.Len(t, all, 3, "the curl, python and node snippets")
	srv := startServer(t, serverArgs("", "snippets-"+randomHex(4)))
	a := newAPI(t, func() string { return "http://" + srv.addr }, testKey)
	rc := newReceiver(t)
	_, secret := a.createWebhook(rc.url("acme"), []string{"invoice.*"}, "acme")
	rc.setSecret("acme", secret)
	dir := t.TempDir()

	runs := []struct {
		name, file string
		argv       func(path string) []string
		need       []string // a command that must succeed for the interpreter to count as present
		events     []string
	}{
		{"curl", "snippet.sh", func(p string) []string { return []string{"sh", p} }, []string{"curl", "--version"}, []string{"evt_1042"}},
		{"python", "snippet.py", func(p string) []string { return []string{"python3", p} },
			[]string{"python3", "-c", "import requests"}, []string{"evt_1043", "evt_1044"}},
		{"node", "snippet.mjs", func(p string) []string { return []string{"node", p} }, []string{"node", "--version"}, []string{"evt_1045"}},
	}
	for _, r := range runs {
		t.Run(r.name, func(t *testing.T) {
			if err := exec.Command(r.need[0], r.need[1:]...).Run(); err != nil {
				t.Skipf("%s is not available here (%v): the %s snippet is not run", strings.Join(r.need, " "), err, r.name)
			}
			path := filepath.Join(dir, r.file)
			require.NoError(t, os.WriteFile(path, []byte(all[r.name]), 0o644))
			var pairs []string
			for _, id := range r.events {
				pairs = append(pairs, "acme/"+id)
			}
			for round, want := range []string{"new", "duplicate"} {
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
				argv := r.argv(path)
				cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
				cmd.Env = append(os.Environ(), "WEBHOOKSD_URL=http://"+srv.addr, "WEBHOOKSD_KEY="+testKey)
				out, err := cmd.CombinedOutput()
				cancel()
				require.NoError(t, err, "round %d: %s", round, out)
				for _, id := range r.events {
					assert.Contains(t, string(out), id)
				}
				if r.name == "curl" {
					assert.Contains(t, string(out), `"duplicate":`+map[string]string{"new": "false", "duplicate": "true"}[want])
				} else {
					assert.Equal(t, len(r.events), strings.Count(string(out), " "+want+" "), "round %d: %s", round, out)
				}
				waitFor(t, r.name+" events delivered", func() (bool, int64) {
					n := rc.received(pairs)
					return n == len(pairs), int64(n)
				})
			}
			waitFor(t, "nothing left to send", func() (bool, int64) { return backlogEmpty(a) })
			got := rc.snapshot()
			for _, p := range pairs {
				assert.Len(t, got[p], 1, "%s delivered once", p)
			}
		})
	}
	assert.Empty(t, rc.badSignatures())
}
