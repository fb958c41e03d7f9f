package webhooks

import (
	goflag "flag"
	"os"
	"runtime"
	"strconv"
	"testing"

	lua "github.com/yuin/gopher-lua"

	"github.com/smartdrop/webhooks/internal/testmain"
)

// longTestsEnv, when set to anything but "" or "0" (.ci/run sets it for the root package's miniredis,
// real Redis and cluster runs), gives the property and soak tests their long sizes. Without it they
// run a size that proves the same guarantee — every assertion kept — in a fraction of the time, so
// that `go test -race ./...` stays quick on a developer's machine.
const longTestsEnv = "WEBHOOKS_LONG_TESTS"

// longTests reports whether WEBHOOKS_LONG_TESTS asks for the long sizes.
func longTests() bool {
	v := os.Getenv(longTestsEnv)
	return v != "" && v != "0"
}

// sized is short, or long when WEBHOOKS_LONG_TESTS is set.
func sized(short, long int) int {
	if longTests() {
		return long
	}
	return short
}

// testParallelism is how many parallel tests run at once unless -test.parallel is given: the suite's
// tests wait on timers, receivers and Redis far more than they compute (on 2 cores under -race they
// keep the CPU about half busy at GOMAXPROCS), so four per core overlap their waits (the root
// package's `go test -race ./...` on 2 cores: 50.6 and 50.8 s at four per core, 57.4–60.0 s at two).
// Tests whose verdict depends on the CPU being theirs (arrival times, allocation counts, goroutine
// census, slog.Default) are not parallel and run alone, before the parallel ones.
func testParallelism() int { return 4 * runtime.GOMAXPROCS(0) }

func TestMain(m *testing.M) {
	goflag.Parse()
	given := false
	goflag.Visit(func(f *goflag.Flag) { given = given || f.Name == "test.parallel" })
	if !given {
		if err := goflag.Set("test.parallel", strconv.Itoa(testParallelism())); err != nil {
			panic(err)
		}
	}
	leanMiniredisLua()
	testmain.Run(m)
}

// leanMiniredisLua shrinks the Lua state gopher-lua gives each script run. miniredis builds a new one
// for every EVALSHA, and gopher-lua's defaults allocate 5,120 registry slots (the value stack, 80 KB)
// and 256 call frames in each, which the race detector then tracks: under -race a state with its
// libraries opened took 283 µs, 200 µs so, and the root package's CPU fell by about a tenth
// (BENCHMARKS.md). Our scripts need far less: 1,024 slots hold an MGET of 1,010 keys unpacked
// (find_duplicates: one key per webhook an event reaches), and a run needs a few nested calls. A
// script that needed more would fail its test with gopher-lua's "registry overflow" or "callstack
// overflow", never quietly. It runs before any test, so before any miniredis goroutine reads these.
func leanMiniredisLua() {
	lua.RegistrySize = 1024
	lua.CallStackSize = 64
}
