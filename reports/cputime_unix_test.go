//go:build unix

package reports

import (
	"syscall"
	"time"
)

// processCPU is the CPU time (user and system) this process has used: a
// benchmark reports it beside wall time, which on a shared machine says
// more about the neighbours than about the code.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
