//go:build unix

package sigv4

import (
	"syscall"
	"testing"
	"time"
)

// processCPU returns the user + system CPU time the process has used:
// benchmarks report it per operation, which other load on a shared
// machine inflates far less than wall time.
func processCPU(b *testing.B) time.Duration {
	b.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
