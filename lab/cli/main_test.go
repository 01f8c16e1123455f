package cli

import (
	"os"
	"testing"

	"github.com/agentoslab/agentlab/devices/virtual"
)

func TestMain(m *testing.M) {
	// The test binary is also the init of the virtual devices vdevice
	// start launches from it.
	virtual.Init()
	os.Exit(m.Run())
}
