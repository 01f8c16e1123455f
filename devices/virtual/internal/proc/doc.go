// Package proc starts and waits for the processes of a virtual device.
//
// Inside a device the init is PID 1 of its pid namespace and must reap
// every zombie, its own children and orphans alike. A wait(-1) loop would
// steal exit statuses from os/exec, so every device process is started
// through a Reaper, which owns all waiting: it reaps whatever exits and
// hands the status to the Process that was started for that pid.
package proc
