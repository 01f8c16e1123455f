// Package su is the root of a virtual device, shaped like Magisk's: a
// daemon in the device's init listens on an abstract socket; the su client
// sends its request (target uid, command, environment, working directory)
// and passes its stdin, stdout and stderr with SCM_RIGHTS; the daemon
// checks the caller's SO_PEERCRED against its policy, starts the command
// with those fds as the target uid, and sends back the exit status, which
// the client exits with. No setuid binary is involved.
package su
