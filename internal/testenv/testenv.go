// Package testenv holds the skips that tests across the module share, so a
// test that needs root, adb or node says so in one line and every skip
// names the same fix.
package testenv

import (
	"net"
	"os"
	"os/exec"
	"testing"
)

// NeedRoot skips t unless it runs as root: virtual devices (Linux
// namespaces) and processes under app uids need it. CI runs as root.
func NeedRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root (namespaces, other uids); run the tests as root, as CI does")
	}
}

// NeedADB skips t unless the adb CLI is on PATH and returns its path.
func NeedADB(t testing.TB) string {
	t.Helper()
	return need(t, "adb", "install the Debian package adb (CI does)")
}

// NeedVirtualDevices skips t unless this host can run virtual devices
// behind a real adb server: root and adb.
func NeedVirtualDevices(t testing.TB) {
	t.Helper()
	NeedRoot(t)
	NeedADB(t)
}

// NeedNode skips t unless node and npm are on PATH and returns their
// paths; the TypeScript conformance clients run with them.
func NeedNode(t testing.TB) (node, npm string) {
	t.Helper()
	return need(t, "node", "install the Debian packages nodejs and npm"),
		need(t, "npm", "install the Debian packages nodejs and npm")
}

// NeedChromium skips t unless Debian's chromium (or a chromium on PATH)
// is there and returns its path; the owner console's browser tests and
// the ui consent driver run it.
func NeedChromium(t testing.TB) string {
	t.Helper()
	if _, err := os.Stat("/usr/bin/chromium"); err == nil {
		return "/usr/bin/chromium"
	}
	return need(t, "chromium", "install the Debian package chromium (CI does)")
}

func need(t testing.TB, bin, fix string) string {
	t.Helper()
	p, err := exec.LookPath(bin)
	if err != nil {
		t.Skipf("%s not on PATH: %s", bin, fix)
	}
	return p
}

// FreePort returns a loopback TCP port that was free a moment ago,
// outside 5554–5585: an adb server probes those for emulators and would
// take a test's listener for one.
func FreePort(t testing.TB) int {
	t.Helper()
	for range 20 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		p := ln.Addr().(*net.TCPAddr).Port
		ln.Close()
		if p < 5554 || p > 5585 {
			return p
		}
	}
	t.Fatal("no free port outside adb's emulator range")
	return 0
}
