package emulator

import (
	"fmt"
	"os"
	"testing"

	tclog "github.com/testcontainers/testcontainers-go/log"
)

// engine is the fake Docker Engine this test binary talks to.
// testcontainers-go resolves the Docker host once per process, so the
// fake is started before any test and named in DOCKER_HOST; tests against
// a real engine live in another package (cmd/vdcontainer).
var engine *fakeEngine

func TestMain(m *testing.M) {
	engine = newFakeEngine()
	os.Setenv("DOCKER_HOST", "tcp://"+engine.addr())
	// Ryuk would be pulled from Docker Hub; the run labels replace it.
	os.Setenv("TESTCONTAINERS_RYUK_DISABLED", "true")
	os.Unsetenv("TESTCONTAINERS_HOST_OVERRIDE")
	os.Unsetenv("DOCKER_CONTEXT")
	// No ~/.testcontainers.properties may redirect the client.
	home, err := os.MkdirTemp("", "emulator-test-home")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Setenv("HOME", home)
	// testcontainers prints its connection banner on the global logger.
	tclog.SetDefault(tclog.NewNoopLogger())
	code := m.Run()
	engine.close()
	os.RemoveAll(home)
	os.Exit(code)
}
