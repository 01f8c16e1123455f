package cli

import (
	"strings"
	"testing"
)

// TestConsoleFlags: without a serial the command says how to name one;
// a bad --consent-driver is a usage error, not a run.
func TestConsoleFlags(t *testing.T) {
	noSerial := func(a *app) {
		a.lookupEnv = func(k string) (string, bool) { return "", false }
	}
	r := runCLIWith(t, noSerial, "console")
	if r.code != ExitUsage || !strings.Contains(r.stderr, "-s SERIAL is required") {
		t.Errorf("console without a serial: exit %d, stderr %q", r.code, r.stderr)
	}
	r = runCLIWith(t, noSerial, "run", "--consent-driver", "finger", "--scenario", "consent/surface")
	if r.code != ExitUsage || !strings.Contains(r.stderr, "--consent-driver: want admin or ui") {
		t.Errorf("bad driver: exit %d, stderr %q", r.code, r.stderr)
	}
}
