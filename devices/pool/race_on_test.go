//go:build race

package pool_test

// slow scales the integration tests' timeouts: under the race detector
// every in-device tool is this instrumented binary, several times slower.
const slow = 4
