//go:build !unix

package reports

import "time"

// processCPU is unknown here; benchmarks report 0.
func processCPU() time.Duration { return 0 }
