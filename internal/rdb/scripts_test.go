package rdb

import (
	"context"
	"io/fs"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// scripts are the package's scripts by file name.
var scripts = map[string]*redis.Script{
	"acquire_probe": AcquireProbe, "take_concurrency": TakeConcurrency, "adopt": Adopt, "claim": Claim, "count": Count, "count_failed": CountFailed, "del_if_equal": DelIfEqual,
	"event_types": EventTypes, "find_duplicates": FindDuplicates, "save_event_type": SaveEventType,
	"indexed_webhooks": IndexedWebhooks, "lease": Lease, "ordered_claim": OrderedClaim,
	"ordered_outcome": OrderedOutcome, "ordered_redeliver": OrderedRedeliver, "outcome": Outcome,
	"probe_now": ProbeNow, "rate": Rate, "redeliver": Redeliver, "release_probe": ReleaseProbe,
	"reserve_order": ReserveOrder, "retry_now": RetryNow, "save_webhook": SaveWebhook,
	"search": Search, "shard_count": ShardCount, "stats_leases": StatsLeases, "stats_queues": StatsQueues,
	"take_both": TakeBoth, "unschedule": Unschedule, "wake_parked": WakeParked,
}

// TestEveryScriptFileIsAScriptThatCompiles: each file of lua/ is one exported script, opens with its
// KEYS / ARGV / returns block, expands to Lua with no placeholder left, and Redis (here miniredis's
// Lua) compiles it; every library of lua/lib is included by some script.
func TestEveryScriptFileIsAScriptThatCompiles(t *testing.T) {
	t.Parallel()
	mr := miniredis.RunT(t)
	c := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	t.Cleanup(func() { _ = c.Close() })
	names, err := fs.Glob(files, "lua/*.lua")
	require.NoError(t, err)
	require.Len(t, names, len(scripts), "a file for every script, a script for every file")
	included := map[string]bool{}
	for _, path := range names {
		name := strings.TrimSuffix(strings.TrimPrefix(path, "lua/"), ".lua")
		s, ok := scripts[name]
		require.True(t, ok, "lua/%s.lua is exported", name)
		raw, err := files.ReadFile(path)
		require.NoError(t, err)
		head := string(raw)[:strings.Index(string(raw), "\n--#include")+1]
		if !strings.Contains(string(raw), "--#include") {
			head = string(raw)
		}
		assert.True(t, strings.HasPrefix(string(raw), "-- "), "%s opens with its comment", name)
		assert.Contains(t, head, "-- KEYS[", "%s names its keys", name)
		assert.Contains(t, head, "-- returns", "%s says what it returns", name)
		for line := range strings.Lines(string(raw)) {
			if lib, ok := strings.CutPrefix(line, "--#include "); ok {
				included[strings.TrimSpace(lib)] = true
			}
		}
		src, err := Source(name)
		require.NoError(t, err, name)
		assert.NotContains(t, src, "{{", name)
		assert.NotContains(t, src, "--#include", name)
		sha, err := s.Load(context.Background(), c).Result()
		require.NoError(t, err, "%s compiles", name)
		assert.Equal(t, s.Hash(), sha, name)
	}
	libs, err := fs.Glob(files, "lua/lib/*.lua")
	require.NoError(t, err)
	for _, path := range libs {
		lib := strings.TrimSuffix(strings.TrimPrefix(path, "lua/lib/"), ".lua")
		raw, _ := files.ReadFile(path)
		for line := range strings.Lines(string(raw)) {
			if inner, ok := strings.CutPrefix(line, "--#include "); ok {
				included[strings.TrimSpace(inner)] = true
			}
		}
		assert.True(t, included[lib] || libIncludedByLib(t, lib), "lua/lib/%s.lua is included somewhere", lib)
	}
}

// libIncludedByLib reports whether another library includes lib.
func libIncludedByLib(t *testing.T, lib string) bool {
	t.Helper()
	libs, _ := fs.Glob(files, "lua/lib/*.lua")
	for _, path := range libs {
		raw, _ := files.ReadFile(path)
		if strings.Contains(string(raw), "--#include "+lib+"\n") {
			return true
		}
	}
	return false
}

// TestSourceExpandsIncludesAndPlaceholders: includes are expanded in place, each library once, and
// placeholders replaced; an unknown placeholder, a missing script or a missing library is an error.
func TestSourceExpandsIncludesAndPlaceholders(t *testing.T) {
	t.Parallel()
	fsys := fstest.MapFS{
		"lua/ok.lua":    {Data: []byte("--#include a\n--#include b\nreturn {{TokenLen}}\n")},
		"lua/lib/a.lua": {Data: []byte("--#include b\nlocal function a() end\n")},
		"lua/lib/b.lua": {Data: []byte("local function b() end\n")},
		"lua/nope.lua":  {Data: []byte("return {{Nope}}\n")},
		"lua/nolib.lua": {Data: []byte("--#include missing\n")},
	}
	src, err := source(fsys, "ok")
	require.NoError(t, err)
	assert.Equal(t, "local function b() end\nlocal function a() end\nreturn 16\n", src)
	for _, name := range []string{"nope", "nolib", "absent"} {
		_, err := source(fsys, name)
		assert.Error(t, err, name)
	}
}

// TestIncludesAreExpandedOnce: a library included by a script and by another library it includes
// (index includes extend; reserve_order includes extend too) appears once.
func TestIncludesAreExpandedOnce(t *testing.T) {
	t.Parallel()
	for name := range scripts {
		src, err := Source(name)
		require.NoError(t, err)
		for _, fn := range []string{"extend", "leaseOf", "retime", "promote", "index", "decode", "countHour", "schedule", "storeEvent"} {
			assert.LessOrEqual(t, strings.Count(src, "local function "+fn+"("), 1, "%s defines %s once", name, fn)
		}
	}
}
