// Package paranoid enforces, in a virtual device, the rule Android
// kernels built with CONFIG_ANDROID_PARANOID_NETWORK apply in
// inet_create and inet6_create: a process may create an AF_INET or
// AF_INET6 socket only when its effective uid is 0 or its effective or
// supplementary groups hold inet (3003) or net_raw (3004); otherwise
// socket(2) fails with EACCES. Without it a virtual device would let an
// app that never asked for the network open sockets a phone refuses.
//
// The device's init installs a seccomp filter on itself (all threads;
// every process of the device inherits it) that hands each socket(2) call
// for those two families to init through a seccomp user notification.
// init reads the caller's credentials from /proc/<tid>/status and either
// lets the call go on (SECCOMP_USER_NOTIF_FLAG_CONTINUE: socket's
// arguments are integers, so nothing can change between the check and the
// call) or fails it with EACCES. Every other system call runs unfiltered.
//
// What it does not cover (the virtual device's doc lists it): the legacy
// 32-bit system-call ABIs (socketcall on i386/arm, x32), and io_uring's
// IORING_OP_SOCKET, which creates a socket without socket(2).
package paranoid
