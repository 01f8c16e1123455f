package adb

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"io"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/agentoslab/agentlab/devices"
	"github.com/agentoslab/agentlab/devices/adb/adbtest"
)

// fakeTools writes shell scripts standing in for Android tools into a
// directory and returns it.
func fakeTools(t *testing.T, tools map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range tools {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// hostShell runs device shell commands with the host's sh, with the fake
// tools first on PATH, so that the commands this package builds (quoting,
// sentinels, probes) are executed for real.
func hostShell(t *testing.T, toolDir string, merged bool) func(string) (string, string, int) {
	return func(cmd string) (string, string, int) {
		c := exec.Command("/bin/sh", "-c", cmd)
		c.Env = append(os.Environ(), "PATH="+toolDir+":"+os.Getenv("PATH"))
		var o, e bytes.Buffer
		c.Stdout, c.Stderr = &o, &e
		if merged {
			// A v1 device interleaves stderr into stdout in time order.
			c.Stderr = &o
		}
		err := c.Run()
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		} else if err != nil {
			return "", err.Error(), 127
		}
		return o.String(), e.String(), code
	}
}

const getpropScript = `case "$1" in
ro.product.model) echo Pixel;; ro.product.name) echo sdk_phone;; ro.product.device) echo emu64;;
ro.build.version.sdk) echo 34;; ro.product.cpu.abi) echo x86_64;; ro.build.type) echo ${BUILD:-userdebug};;
ro.debuggable) echo ${DEBUGGABLE:-1};; sys.boot_completed) echo 1;; esac`

type fixture struct {
	srv *adbtest.Server
	dev *adbtest.Device
	d   *Device
}

func newFixture(t *testing.T, v2 bool, tools map[string]string) fixture {
	t.Helper()
	srv, err := adbtest.NewServer()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	if tools == nil {
		tools = map[string]string{}
	}
	if _, ok := tools["getprop"]; !ok {
		tools["getprop"] = getpropScript
	}
	// The tests run as root; the device's shell user is 2000.
	if _, ok := tools["id"]; !ok {
		tools["id"] = "echo 2000"
	}
	fd := &adbtest.Device{
		Serial: "127.0.0.1:15555", Product: "sdk_phone", Model: "Pixel", Name: "emu64",
		Shell: hostShell(t, fakeTools(t, tools), !v2),
		Service: func(svc string, c net.Conn) bool {
			if svc != "localabstract:echo" {
				return false
			}
			io.Copy(c, c)
			return true
		},
	}
	if v2 {
		fd.Features = []string{"shell_v2", "cmd"}
	}
	srv.AddDevice(fd)
	s := NewServer(srv.Addr(), nil)
	return fixture{srv: srv, dev: fd, d: s.Device(fd.Serial)}
}

func tctx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestShellExitCodes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		cmd    string
		stdout string
		stderr string // v2 only; v1 merges it into stdout
		code   int
	}{
		{"exit code", "exit 3", "", "", 3},
		{"stdout without newline", "printf abc", "abc", "", 0},
		{"single quotes", `echo 'it'"'"'s'`, "it's\n", "", 0},
		{"stderr", "echo out; echo err >&2; exit 1", "out\n", "err\n", 1},
		{"comment does not eat the sentinel", "echo hi # trailing", "hi\n", "", 0},
	}
	for _, v2 := range []bool{true, false} {
		f := newFixture(t, v2, nil)
		for _, tt := range tests {
			name := tt.name + map[bool]string{true: "/v2", false: "/v1"}[v2]
			t.Run(name, func(t *testing.T) {
				res, err := f.d.Shell(tctx(t), tt.cmd)
				if err != nil {
					t.Fatal(err)
				}
				wantOut, wantErr := tt.stdout, tt.stderr
				if !v2 {
					wantOut, wantErr = tt.stdout+tt.stderr, ""
				}
				if res.ExitCode != tt.code || string(res.Stdout) != wantOut || string(res.Stderr) != wantErr {
					t.Fatalf("Shell(%q) = %d %q %q; want %d %q %q", tt.cmd, res.ExitCode, res.Stdout, res.Stderr, tt.code, wantOut, wantErr)
				}
			})
		}
	}
}

func TestShellOutputBound(t *testing.T) {
	t.Parallel()
	srv, err := adbtest.NewServer()
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	srv.AddDevice(&adbtest.Device{Serial: "s", Product: "p", Model: "m", Name: "d", Features: []string{"shell_v2"},
		Shell: func(string) (string, string, int) { return strings.Repeat("x", 2048), "", 0 }})
	d := NewServer(srv.Addr(), &Options{MaxOutput: 1024}).Device("s")
	if _, err := d.Shell(tctx(t), "yes"); !errors.Is(err, devices.ErrOutputTooLarge) {
		t.Fatalf("err = %v, want ErrOutputTooLarge", err)
	}
}

func TestDeviceGone(t *testing.T) {
	t.Parallel()
	f := newFixture(t, true, nil)
	gone := NewServer(f.srv.Addr(), nil).Device("nope")
	ctx := tctx(t)
	if _, err := gone.Shell(ctx, "true"); !errors.Is(err, devices.ErrDeviceGone) {
		t.Errorf("Shell on absent device: %v", err)
	}
	if _, err := gone.State(ctx); !errors.Is(err, devices.ErrDeviceGone) {
		t.Errorf("State on absent device: %v", err)
	}
	f.srv.SetState(f.dev.Serial, "offline")
	if _, err := f.d.Stat(ctx, "/x"); !errors.Is(err, devices.ErrDeviceGone) {
		t.Errorf("Stat on offline device: %v", err)
	}
	if _, err := f.d.Forward(ctx, "tcp:0", "localabstract:x"); !errors.Is(err, devices.ErrDeviceGone) {
		t.Errorf("Forward on offline device: %v", err)
	}
	if st, err := f.d.State(ctx); err != nil || st != "offline" {
		t.Errorf("State = %q, %v", st, err)
	}
}

func TestInfoRootMethod(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		tools map[string]string
		env   string
		root  devices.RootMethod
		ver   string
	}{
		{"magisk", map[string]string{"su": `[ "$1" = -v ] && echo 27.0:MAGISKSU`}, "", devices.RootMagisk, "27.0:MAGISKSU"},
		{"kernelsu", map[string]string{"su": `[ "$1" = -v ] && echo v1.0.1:KernelSU`}, "", devices.RootKernelSU, "v1.0.1:KernelSU"},
		{"magisk daemon only", map[string]string{"magisk": `echo 27.0:MAGISK:R`}, "", devices.RootMagisk, "27.0:MAGISK:R"},
		{"adb root on userdebug", nil, "", devices.RootADB, ""},
		{"none on user build", nil, "DEBUGGABLE=0 BUILD=user", devices.RootNone, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tools := map[string]string{}
			for k, v := range tt.tools {
				tools[k] = v
			}
			tools["getprop"] = "export " + tt.env + " >/dev/null 2>&1; " + getpropScript
			if tt.env == "" {
				tools["getprop"] = getpropScript
			}
			f := newFixture(t, true, tools)
			in, err := f.d.Info(tctx(t))
			if err != nil {
				t.Fatal(err)
			}
			want := devices.Info{Serial: "127.0.0.1:15555", Model: "Pixel", Product: "sdk_phone", Device: "emu64", APILevel: 34, ABI: "x86_64",
				BuildType: "userdebug", Debuggable: true, Root: tt.root, RootVersion: tt.ver}
			if tt.root == devices.RootNone {
				want.BuildType, want.Debuggable = "user", false
			}
			in.Features = nil
			if in.Serial != want.Serial || in.Model != want.Model || in.Product != want.Product || in.Device != want.Device ||
				in.APILevel != want.APILevel || in.ABI != want.ABI || in.BuildType != want.BuildType ||
				in.Debuggable != want.Debuggable || in.Root != want.Root || in.RootVersion != want.RootVersion {
				t.Fatalf("Info = %+v\nwant   %+v", in, want)
			}
		})
	}
}

func TestSuMagisk(t *testing.T) {
	t.Parallel()
	// A fake su that runs "su -c CMD" and says who it claims to be.
	f := newFixture(t, true, map[string]string{"su": `case "$1" in -v) echo 27.0:MAGISKSU;; -c) shift; echo "as-root"; sh -c "$1";; esac`})
	res, err := f.d.Su(tctx(t), "echo 'quoted arg'; exit 4")
	if err != nil || res.ExitCode != 4 || string(res.Stdout) != "as-root\nquoted arg\n" {
		t.Fatalf("Su = %+v, %v", res, err)
	}
}

func TestSuNone(t *testing.T) {
	t.Parallel()
	f := newFixture(t, true, map[string]string{"getprop": strings.ReplaceAll(getpropScript, "${DEBUGGABLE:-1}", "0")})
	if _, err := f.d.Su(tctx(t), "id"); !errors.Is(err, devices.ErrNoRoot) {
		t.Fatalf("Su on a device without root: %v", err)
	}
}

func TestPushPullStat(t *testing.T) {
	t.Parallel()
	f := newFixture(t, true, nil)
	ctx := tctx(t)
	data := make([]byte, 300<<10+7) // several sync chunks and a ragged tail
	rand.Read(data)
	if err := f.d.Push(ctx, bytes.NewReader(data), "/data/local/tmp/blob", 0o751); err != nil {
		t.Fatal(err)
	}
	fi, err := f.d.Stat(ctx, "/data/local/tmp/blob")
	if err != nil || fi.Size != int64(len(data)) || fi.Mode != 0o751 || fi.ModTime.IsZero() {
		t.Fatalf("Stat = %+v, %v", fi, err)
	}
	var got bytes.Buffer
	if err := f.d.Pull(ctx, "/data/local/tmp/blob", &got); err != nil || !bytes.Equal(got.Bytes(), data) {
		t.Fatalf("Pull: %v (equal=%v)", err, bytes.Equal(got.Bytes(), data))
	}
	if _, err := f.d.Stat(ctx, "/missing"); !errors.Is(err, devices.ErrNotExist) || !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Stat(missing) = %v", err)
	}
	if err := f.d.Pull(ctx, "/missing", io.Discard); !errors.Is(err, devices.ErrNotExist) {
		t.Fatalf("Pull(missing) = %v", err)
	}
	// A reader that returns its last bytes together with io.EOF (as zip
	// readers do) must not lose them.
	if err := f.d.Push(ctx, iotest.DataErrReader(bytes.NewReader(data)), "/data/local/tmp/blob2", 0o644); err != nil {
		t.Fatal(err)
	}
	if got, _ := f.dev.ReadFile("/data/local/tmp/blob2"); !bytes.Equal(got.Data, data) {
		t.Fatalf("push from a data+EOF reader: got %d bytes, want %d", len(got.Data), len(data))
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := f.d.Push(cctx, bytes.NewReader(data), "/x", 0o644); !errors.Is(err, context.Canceled) {
		t.Fatalf("Push with cancelled ctx = %v", err)
	}
}

func TestForwardDialReverse(t *testing.T) {
	t.Parallel()
	f := newFixture(t, true, nil)
	ctx := tctx(t)
	roundTrip := func(c net.Conn) {
		t.Helper()
		defer c.Close()
		c.Write([]byte("hello"))
		b := make([]byte, 5)
		if _, err := io.ReadFull(c, b); err != nil || string(b) != "hello" {
			t.Fatalf("echo: %q %v", b, err)
		}
	}
	port, err := f.d.Forward(ctx, "tcp:0", "localabstract:echo")
	if err != nil || port == 0 {
		t.Fatalf("Forward = %d, %v", port, err)
	}
	c, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", itoa(port)))
	if err != nil {
		t.Fatal(err)
	}
	roundTrip(c)
	if err := f.d.RemoveForward(ctx, "tcp:"+itoa(port)); err != nil {
		t.Fatal(err)
	}
	dc, err := f.d.Dial(ctx, "localabstract:echo")
	if err != nil {
		t.Fatal(err)
	}
	roundTrip(dc)
	for _, bad := range []string{"echo", "tcp:x", "tcp:70000", "localabstract:", "localabstract:a;b"} {
		if _, err := f.d.Dial(ctx, bad); !errors.Is(err, ErrBadSpec) {
			t.Errorf("Dial(%q) = %v, want ErrBadSpec", bad, err)
		}
	}
	rp, err := f.d.Reverse(ctx, "tcp:0", "tcp:9000")
	if err != nil || rp == 0 {
		t.Fatalf("Reverse = %d, %v", rp, err)
	}
	if err := f.d.RemoveReverse(ctx, "tcp:"+itoa(rp)); err != nil {
		t.Fatal(err)
	}
}

func TestUnsupportedFacilities(t *testing.T) {
	t.Parallel()
	f := newFixture(t, true, nil)
	ctx := tctx(t)
	if _, err := exec.LookPath("logcat"); err == nil {
		t.Skip("host has logcat")
	}
	if _, err := f.d.Logs(ctx, time.Time{}); !errors.Is(err, devices.ErrUnsupported) {
		t.Errorf("Logs = %v, want ErrUnsupported", err)
	}
	if _, err := f.d.Screenshot(ctx); !errors.Is(err, devices.ErrUnsupported) {
		t.Errorf("Screenshot = %v, want ErrUnsupported", err)
	}
}

func TestFacilitiesPresent(t *testing.T) {
	t.Parallel()
	f := newFixture(t, true, map[string]string{
		"logcat":    `echo "args: $*"`,
		"screencap": `printf '\211PNG\r\n\032\nrest'`,
		"dumpsys":   `printf 'Current Battery Service state:\n  AC powered: false\n  USB powered: true\n  present: true\n  level: 42\n'`,
	})
	ctx := tctx(t)
	since := time.Unix(1700000000, 250e6)
	logs, err := f.d.Logs(ctx, since)
	if err != nil || string(logs) != "args: -d -v threadtime -T 1700000000.250\n" {
		t.Errorf("Logs = %q, %v", logs, err)
	}
	png, err := f.d.Screenshot(ctx)
	if err != nil || !bytes.HasPrefix(png, pngMagic) {
		t.Errorf("Screenshot = %q, %v", png, err)
	}
	b, err := f.d.Battery(ctx)
	if err != nil || b != (devices.Battery{Present: true, Level: 42, Charging: true}) {
		t.Errorf("Battery = %+v, %v", b, err)
	}
	free, err := f.d.FreeStorage(ctx, t.TempDir())
	if err != nil || free <= 0 {
		t.Errorf("FreeStorage = %d, %v", free, err)
	}
}

func TestNoBattery(t *testing.T) {
	t.Parallel()
	f := newFixture(t, true, map[string]string{"dumpsys": "exit 1", "cat": "exit 1"})
	b, err := f.d.Battery(tctx(t))
	if err != nil || b.Present {
		t.Fatalf("Battery = %+v, %v; want Present=false", b, err)
	}
}

func TestServerDevicesConnect(t *testing.T) {
	t.Parallel()
	f := newFixture(t, true, nil)
	s := NewServer(f.srv.Addr(), nil)
	ctx := tctx(t)
	if v, err := s.Version(ctx); err != nil || v != 41 {
		t.Fatalf("Version = %d, %v", v, err)
	}
	es, err := s.Devices(ctx)
	if err != nil || len(es) != 1 || es[0] != (DeviceEntry{Serial: "127.0.0.1:15555", State: "device", Product: "sdk_phone", Model: "Pixel", Device: "emu64", TransportID: 1}) {
		t.Fatalf("Devices = %+v, %v", es, err)
	}
	if err := s.Connect(ctx, "127.0.0.1:15555"); err != nil {
		t.Fatal(err)
	}
	f.srv.OnConnect = func(a string) string { return "failed to connect to " + a }
	if err := s.Connect(ctx, "127.0.0.1:1"); err == nil {
		t.Fatal("Connect reported success for a failure text")
	}
	if s.Device("x") != s.Device("x") {
		t.Fatal("Device handles are not cached")
	}
	for serial, want := range map[string]bool{"127.0.0.1:15555": true, "emulator-5554": false, "[::1]:5555": true, "abc:def": false} {
		if IsTCP(serial) != want {
			t.Errorf("IsTCP(%q) = %v", serial, !want)
		}
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
