//go:build !race

package pool_test

// raceEnabled: built with -race (see TestFourVirtualDevices).
const raceEnabled = false
