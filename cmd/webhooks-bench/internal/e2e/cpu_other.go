//go:build !unix

package e2e

import "time"

// ProcessCPU is not measured on this platform.
func ProcessCPU() time.Duration { return 0 }
