// Package archtest holds tests that keep the repository's shape: every
// package documented, the runtime free of lab and device code, the SDKs
// free of heavy dependencies, and no grab-bag package names.
package archtest
