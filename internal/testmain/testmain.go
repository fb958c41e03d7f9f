// Package testmain is the TestMain of the test binaries of this module and of its nested modules:
// `func TestMain(m *testing.M) { testmain.Run(m) }`.
package testmain

import (
	"os"
	"syscall"
	"testing"
)

// Run runs m's tests and ends the process with their exit code. A run that passed ends through
// syscall.Exit, not os.Exit: under -race, os.Exit(0) runs the race detector's finaliser, which sleeps
// GORACE's atexit_sleep_ms (1 s by default) whenever goroutines are left, and the runtime's own always
// are. A test binary whose one test is empty took 1.011 s under -race, and 0.010 s with
// GORACE=atexit_sleep_ms=0 (BENCHMARKS.md). The sleep lets stray goroutines report a race before the
// process ends; m.Run has already failed a run whose race detector reported one outside its tests
// ("race detected outside of test execution"), and each test fails on those during it. A coverage
// run (-cover) ends through os.Exit, whose exit hooks write the counters.
func Run(m *testing.M) { Exit(m.Run()) }

// Exit ends the process with the exit code of a test binary's m.Run, as Run does: for a TestMain that
// has work to do between the two.
func Exit(code int) {
	if code == 0 && testing.CoverMode() == "" {
		syscall.Exit(0)
	}
	os.Exit(code)
}
