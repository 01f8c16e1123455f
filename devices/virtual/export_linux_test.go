//go:build linux

package virtual

// StartDetachedFrom starts a kept device whose keeper runs exe (a copy of
// the test binary), so a test can delete the binary that started it.
var StartDetachedFrom = startDetached
