package provision

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/agentoslab/agentlab/devices"
	"github.com/agentoslab/agentlab/devices/adbserver"
	"github.com/agentoslab/agentlab/devices/virtual"
	"github.com/agentoslab/agentlab/devices/virtual/virtualtest"
	"github.com/agentoslab/agentlab/lab/build"
)

func TestMain(m *testing.M) {
	// The test binary is also every virtual device's init.
	virtual.Init()
	os.Exit(m.Run())
}

// shared are the artifacts every test provisions, built once. The build
// cache is kept under the temporary directory between runs (it is
// content-addressed, so a kept cache is always correct), which spares the
// next run the linking of every binary.
var shared struct {
	once sync.Once
	arts *build.Artifacts
	err  error
}

// artifacts builds the real tree (agentosd, every sample app) for this
// host's ABI.
func artifacts(t testing.TB) *build.Artifacts {
	t.Helper()
	shared.once.Do(func() {
		dir := filepath.Join(os.TempDir(), "agentlab-test-build")
		root, err := build.FindRoot(".")
		if err != nil {
			shared.err = err
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
		defer cancel()
		shared.arts, shared.err = build.Build(ctx, &build.Options{Root: root, OutDir: filepath.Join(dir, "out"),
			CacheDir: filepath.Join(dir, "cache"), SigningKey: filepath.Join(dir, "keys", "signing.key"), Version: "labtest-1"})
	})
	if shared.err != nil {
		t.Fatalf("build: %v", shared.err)
	}
	return shared.arts
}

// testDevice is a virtual device behind a private adb server.
type testDevice struct {
	vd  *virtual.Device
	srv *adbserver.Server
	dev devices.Device
}

func startDevice(t testing.TB, o *virtual.Options) *testDevice {
	t.Helper()
	v := virtualtest.Start(t, o)
	td := &testDevice{vd: v.VD, srv: v.ADB, dev: v.Dev}
	t.Cleanup(func() {
		if t.Failed() {
			td.dumpLogs(t)
		}
	})
	return td
}

// dumpLogs prints the device's and the supervisor's logs.
func (td *testDevice) dumpLogs(t testing.TB) {
	for _, rel := range []string{"init.log", "data/agentos/supervisor/supervisor.log", "data/agentos/supervisor/runtime.log"} {
		if b, err := os.ReadFile(filepath.Join(td.vd.Root(), rel)); err == nil {
			if len(b) > 8000 {
				b = b[len(b)-8000:]
			}
			t.Logf("%s %s:\n%s", td.vd.Name(), rel, b)
		}
	}
}

// lineRecorder is a Reporter for tests.
type lineRecorder struct {
	mu    sync.Mutex
	lines []string
}

func (r *lineRecorder) Begin(serial, step string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lines = append(r.lines, "begin "+step)
}

func (r *lineRecorder) End(serial string, s Step) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lines = append(r.lines, fmt.Sprintf("end %s changed=%v err=%q", s.Name, s.Changed, s.Err))
}
