// Package archtest holds tests that keep the repository's shape: every
// package documented, the runtime free of lab and device code, the SDKs
// free of heavy dependencies, no grab-bag package names, and the
// runtime's single mechanisms — nothing registered from init(), admin as
// the protocol only, every listener on transport.Service, SO_PEERCRED
// read in one package, one JSON-RPC error envelope.
package archtest
