//go:build !unix

package loadgen

import "time"

// cpuTime is unavailable here: generator CPU is reported as 0.
func cpuTime() time.Duration { return 0 }
