package emulator

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentoslab/agentlab/devices"
	"github.com/agentoslab/agentlab/devices/adb"
	"github.com/agentoslab/agentlab/devices/adb/adbtest"
	"github.com/stretchr/testify/assert"
)

// sdk is a fake Android SDK: shell scripts standing in for avdmanager,
// emulator and adb, which record their arguments in dir.
type sdk struct {
	dir string
}

func newSDK(t *testing.T, emulatorBody, adbBody string) sdk {
	t.Helper()
	dir := t.TempDir()
	write := func(name, body string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write("avdmanager", `echo "$@" > "$(dirname "$0")/avdmanager.args"; cat > "$(dirname "$0")/avdmanager.stdin"`)
	if emulatorBody == "" {
		// Stays up until killed, like an emulator.
		emulatorBody = `echo "$@" > "$(dirname "$0")/emulator.args"; echo $$ > "$(dirname "$0")/emulator.pid"; echo "emulator: INFO: boot"; exec sleep 600`
	}
	write("emulator", emulatorBody)
	if adbBody == "" {
		adbBody = `echo "$@" >> "$(dirname "$0")/adb.args"; [ "$5" = emu ] && [ "$6" = kill ] && kill "$(cat "$(dirname "$0")/emulator.pid")"; exit 0`
	}
	write("adb", adbBody)
	return sdk{dir: dir}
}

func (s sdk) read(name string) string {
	b, _ := os.ReadFile(filepath.Join(s.dir, name))
	return strings.TrimSpace(string(b))
}

// emulatorDevice is the fake device an emulator brings up: getprop
// answers, and adbd restarts as root on "root:".
type emulatorDevice struct {
	mu        sync.Mutex
	buildType string
	root      bool
	rootCalls int
}

func (e *emulatorDevice) device(serial string) *adbtest.Device {
	return &adbtest.Device{
		Serial: serial, Product: "sdk_gphone64_x86_64", Model: "sdk_gphone64_x86_64", Name: "emu64xa",
		Features: []string{"shell_v2"},
		Shell: func(cmd string) (string, string, int) {
			e.mu.Lock()
			defer e.mu.Unlock()
			switch {
			case cmd == "id -u":
				if e.root {
					return "0\n", "", 0
				}
				return "2000\n", "", 0
			case strings.HasPrefix(cmd, "getprop sys.boot_completed"):
				return "1\n", "", 0
			case strings.HasPrefix(cmd, "for p in"):
				dbg := "1"
				if e.buildType == "user" {
					dbg = "0"
				}
				return "ro.build.type=" + e.buildType + "\nro.debuggable=" + dbg + "\nro.build.version.sdk=34\nro.product.cpu.abi=x86_64\nsu=\nmagisk=\nuid=2000\n", "", 0
			}
			return "", "", 0
		},
		Service: func(svc string, c net.Conn) bool {
			if svc != "root:" {
				return false
			}
			e.mu.Lock()
			e.rootCalls++
			e.root = true
			e.mu.Unlock()
			io.WriteString(c, "restarting adbd as root\n")
			return true
		},
	}
}

// appearWhenStarted adds the device to the fake server once the fake
// emulator has written its arguments, as a real emulator registers with
// the adb server only after it starts.
func appearWhenStarted(t *testing.T, s sdk, srv *adbtest.Server, d *adbtest.Device) {
	done := make(chan struct{})
	t.Cleanup(func() { <-done })
	go func() {
		defer close(done)
		started := func() bool { return s.read("emulator.args") != "" }
		if assert.Eventually(t, started, 10*time.Second, 20*time.Millisecond, "the emulator never started") {
			srv.AddDevice(d)
		}
	}()
}

func newAVD(t *testing.T, s sdk, mod func(*AVDOptions)) (*AVDProvider, *adbtest.Server) {
	t.Helper()
	srv, err := adbtest.NewServer()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	o := &AVDOptions{SDKRoot: "", AVDManager: filepath.Join(s.dir, "avdmanager"), Emulator: filepath.Join(s.dir, "emulator"),
		ADB: filepath.Join(s.dir, "adb"), Server: adb.NewServer(srv.Addr(), nil), BootTimeout: 10 * time.Second, KillTimeout: 2 * time.Second}
	if mod != nil {
		mod(o)
	}
	return NewAVDProvider(o), srv
}

func TestCreateAVD(t *testing.T) {
	t.Parallel()
	s := newSDK(t, "", "")
	p, _ := newAVD(t, s, nil)
	err := p.Create(context.Background(), AVD{Name: "lab_34", Package: "system-images;android-34;google_apis;x86_64", Device: "pixel_6"})
	if err != nil {
		t.Fatal(err)
	}
	if got := s.read("avdmanager.args"); got != "create avd -n lab_34 -k system-images;android-34;google_apis;x86_64 --force -d pixel_6" {
		t.Fatalf("avdmanager args = %q", got)
	}
	if got := s.read("avdmanager.stdin"); got != "no" {
		t.Fatalf("avdmanager stdin = %q; the custom hardware profile prompt must be answered", got)
	}
	for _, bad := range []AVD{{Name: "", Package: "x"}, {Name: "a b", Package: "x"}, {Name: "ok"}} {
		if err := p.Create(context.Background(), bad); err == nil {
			t.Errorf("Create(%+v) accepted", bad)
		}
	}
}

func TestBootAndKill(t *testing.T) {
	t.Parallel()
	tests := []struct {
		buildType string
		rootCalls int
	}{
		{"userdebug", 1}, // google_apis images: adb root
		{"user", 0},      // Play images refuse root: do not ask
	}
	for _, tt := range tests {
		t.Run(tt.buildType, func(t *testing.T) {
			t.Parallel()
			s := newSDK(t, "", "")
			p, srv := newAVD(t, s, nil)
			dev := &emulatorDevice{buildType: tt.buildType}
			appearWhenStarted(t, s, srv, dev.device("emulator-5580"))
			e, err := p.Boot(context.Background(), "lab_34", 5580)
			if err != nil {
				t.Fatal(err)
			}
			if got := s.read("emulator.args"); got != "-avd lab_34 -no-window -no-audio -no-boot-anim -port 5580 -read-only" {
				t.Fatalf("emulator args = %q", got)
			}
			if e.Serial != "emulator-5580" || dev.rootCalls != tt.rootCalls {
				t.Fatalf("serial %s, root calls %d (want %d)", e.Serial, dev.rootCalls, tt.rootCalls)
			}
			if err := e.Kill(context.Background()); err != nil {
				t.Fatal(err)
			}
			select {
			case <-e.Done():
			default:
				t.Fatal("Kill returned with the emulator still running")
			}
			if got := s.read("adb.args"); !strings.Contains(got, "-s emulator-5580 emu kill") {
				t.Fatalf("adb args = %q; want a clean emu kill first", got)
			}
		})
	}
}

func TestKillFallsBackToSignals(t *testing.T) {
	t.Parallel()
	// adb emu kill does nothing (console unreachable): SIGTERM must follow.
	s := newSDK(t, "", "exit 0")
	p, srv := newAVD(t, s, func(o *AVDOptions) { o.KillTimeout = 200 * time.Millisecond })
	dev := &emulatorDevice{buildType: "user"}
	appearWhenStarted(t, s, srv, dev.device("emulator-5582"))
	e, err := p.Boot(context.Background(), "x", 5582)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Kill(context.Background()); err != nil {
		t.Fatal(err)
	}
	<-e.Done()
}

func TestBootFailures(t *testing.T) {
	t.Parallel()
	t.Run("emulator exits", func(t *testing.T) {
		t.Parallel()
		s := newSDK(t, `echo "emulator: ERROR: x86_64 emulation currently requires hardware acceleration!"; exit 1`, "")
		p, _ := newAVD(t, s, nil)
		_, err := p.Boot(context.Background(), "x", 5584)
		if !errors.Is(err, ErrExited) || !strings.Contains(err.Error(), "requires hardware acceleration") {
			t.Fatalf("Boot = %v; want ErrExited with the emulator's words", err)
		}
	})
	t.Run("never boots", func(t *testing.T) {
		t.Parallel()
		s := newSDK(t, "", "")
		p, _ := newAVD(t, s, func(o *AVDOptions) { o.BootTimeout = 300 * time.Millisecond })
		_, err := p.Boot(context.Background(), "x", 5586)
		if !errors.Is(err, devices.ErrBootTimeout) {
			t.Fatalf("Boot = %v; want ErrBootTimeout", err)
		}
		// The emulator it started must be gone.
		pid := s.read("emulator.pid")
		if pid != "" {
			if _, err := os.Stat("/proc/" + pid); err == nil {
				b, _ := os.ReadFile("/proc/" + pid + "/stat")
				if !strings.Contains(string(b), ") Z ") {
					t.Fatalf("emulator %s still running after a failed boot", pid)
				}
			}
		}
	})
	t.Run("bad port", func(t *testing.T) {
		t.Parallel()
		p, _ := newAVD(t, newSDK(t, "", ""), nil)
		for _, port := range []int{5555, 5553, 5684} {
			if _, err := p.Boot(context.Background(), "x", port); !errors.Is(err, ErrBadPort) {
				t.Errorf("Boot(port %d) = %v", port, err)
			}
		}
	})
	t.Run("no emulator tool", func(t *testing.T) {
		t.Parallel()
		p, _ := newAVD(t, newSDK(t, "", ""), func(o *AVDOptions) { o.Emulator = filepath.Join(t.TempDir(), "nope") })
		if _, err := p.Boot(context.Background(), "x", 5588); !errors.Is(err, ErrToolMissing) {
			t.Fatalf("Boot = %v", err)
		}
	})
}
