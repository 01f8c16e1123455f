//go:build linux

package boot

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// Module scripts (and the services they start) get init's environment,
// which has no TMPDIR on a phone; adb's shell has one.
func TestServiceEnvHasNoTMPDIR(t *testing.T) {
	joined := "\n" + strings.Join(ServiceEnv(), "\n") + "\n"
	assert.NotContains(t, joined, "\nTMPDIR=")
	assert.Contains(t, joined, "\nANDROID_ROOT=/system\n")
	assert.Contains(t, joined, "\nANDROID_TZDATA_ROOT=/apex/com.android.tzdata\n")
	assert.Contains(t, "\n"+strings.Join(Env(2000, ""), "\n")+"\n", "\nTMPDIR=/data/local/tmp\n")
}
