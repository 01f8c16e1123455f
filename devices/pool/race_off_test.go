//go:build !race

package pool_test

// slow scales the integration tests' timeouts (see race_on_test.go).
const slow = 1
