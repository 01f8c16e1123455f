//go:build !agentos_faultinject

package faultinject

// Enabled is false: this build cannot inject faults.
const Enabled = false

// Active always answers false in this build.
func Active(string) bool { return false }

// SetRoot does nothing in this build.
func SetRoot(string) {}
