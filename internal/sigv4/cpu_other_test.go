//go:build !unix

package sigv4

import (
	"testing"
	"time"
)

// processCPU is 0 where getrusage is missing.
func processCPU(*testing.B) time.Duration { return 0 }
