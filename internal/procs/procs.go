// Package procs decides how many threads run Go code at once in the
// server (the runtime's GOMAXPROCS), and remembers the number of CPUs that
// was derived from, for what must be sized by CPUs rather than by threads
// (CPU-bound work such as password hashing).
//
// Why twice the CPUs: about 45 % of the server's CPU under the mixed
// workload is spent in the kernel, in file system calls that block their
// thread (fdatasync, fsync, openat, renameat; Pebble's WAL sync); while a
// thread is in one, the processor it held runs no Go code until the
// runtime hands it to another thread. With twice as many processors, Go
// code runs on the CPU time those calls leave, and the kernel shares the
// CPUs among the threads. On the 2-CPU reference machine the mixed
// workload served 1.07–1.33× the requests with 4 than with 2 (three A/Bs,
// bench/2026-11-26-spares), and 8 gained nothing over 4. Setting the
// number fixes it: the runtime no longer follows a change of the cgroup's
// CPU quota.
package procs

import (
	"runtime"
	"sync/atomic"
)

var cpus atomic.Int64 // the runtime's own GOMAXPROCS, recorded by Apply

// Apply sets how many threads may run Go code at once, through set
// (runtime.GOMAXPROCS in production): n if positive, else nothing if the
// GOMAXPROCS environment variable is set (the runtime has applied it),
// else twice the runtime's default — the CPUs the process may use, or its
// CPU quota. It returns the number and why, or "" if it left the runtime's
// setting alone. CPUs reports the runtime's number from then on.
func Apply(n int, getenv func(string) string, set func(int) int) (int, string) {
	def := set(0)
	cpus.Store(int64(def))
	switch {
	case n > 0:
		set(n)
		return n, "procs"
	case getenv("GOMAXPROCS") != "":
		return 0, ""
	}
	set(2 * def)
	return 2 * def, "twice the CPUs available"
}

// CPUs returns the number of CPUs the process may use as the runtime saw
// it before Apply (GOMAXPROCS, if the environment set it), or the current
// GOMAXPROCS if Apply has not run.
func CPUs() int {
	if n := cpus.Load(); n > 0 {
		return int(n)
	}
	return runtime.GOMAXPROCS(0)
}
