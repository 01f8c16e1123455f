// Package peer reads the kernel's identity of the other end of a unix
// socket (SO_PEERCRED): the only identity the device's services trust.
package peer
