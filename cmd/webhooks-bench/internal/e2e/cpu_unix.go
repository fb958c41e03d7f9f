//go:build unix

package e2e

import (
	"syscall"
	"time"
)

// ProcessCPU is the CPU time (user + system) this process has used.
func ProcessCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
