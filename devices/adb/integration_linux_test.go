//go:build linux

package adb_test

import (
	"archive/zip"
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentoslab/agentlab/devices"
	"github.com/agentoslab/agentlab/devices/adb"
	"github.com/agentoslab/agentlab/devices/adbserver"
	"github.com/agentoslab/agentlab/devices/virtual"
	"github.com/agentoslab/agentlab/internal/testenv"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMain(m *testing.M) {
	// This test binary is also every virtual device's init and tools.
	virtual.Init()
	os.Exit(m.Run())
}

// vdev is a virtual device adopted by a private adb server.
type vdev struct {
	vd  *virtual.Device
	srv *adb.Server
	d   *adb.Device
}

// startVirtual boots a virtual device with the given root method behind
// a private adb server and connects it, or skips where this host cannot.
func startVirtual(t testing.TB, root string) vdev {
	t.Helper()
	testenv.NeedVirtualDevices(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	as, err := adbserver.Start(ctx, nil)
	if err != nil {
		t.Fatalf("adb server: %v", err)
	}
	t.Cleanup(func() { as.Close() })
	vd, err := virtual.Start(ctx, &virtual.Options{StateDir: t.TempDir(), RootMethod: root})
	if err != nil {
		t.Fatalf("virtual device: %v", err)
	}
	t.Cleanup(func() {
		sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		vd.Stop(sctx)
	})
	srv := adb.NewServer(as.Addr(), nil)
	if err := srv.Connect(ctx, vd.Serial()); err != nil {
		t.Fatal(err)
	}
	d := srv.Device(vd.Serial())
	if err := d.WaitBoot(ctx); err != nil {
		t.Fatal(err)
	}
	return vdev{vd: vd, srv: srv, d: d}
}

func ctx(t testing.TB, d time.Duration) context.Context {
	c, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return c
}

func mustShell(t testing.TB, d devices.Device, cmd string) string {
	t.Helper()
	res, err := d.Shell(ctx(t, 30*time.Second), cmd)
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("shell %q: exit %d, %v: %s%s", cmd, res.ExitCode, err, res.Stdout, res.Stderr)
	}
	return string(res.Stdout)
}

func TestVirtualDevice(t *testing.T) {
	t.Parallel()
	v := startVirtual(t, virtual.RootMagisk)
	c := ctx(t, time.Minute)

	devs, err := v.srv.Devices(c)
	if err != nil || len(devs) != 1 || devs[0].Serial != v.vd.Serial() || devs[0].State != "device" || devs[0].Product != "agentlab_vdev" {
		t.Fatalf("Devices = %+v, %v", devs, err)
	}
	in, err := v.d.Info(c)
	if err != nil {
		t.Fatal(err)
	}
	if in.Product != "agentlab_vdev" || in.Model != "AgentLab Virtual Device" || in.Device != "vdev" || in.APILevel != 35 ||
		in.ABI == "" || in.Root != devices.RootMagisk || !strings.HasSuffix(in.RootVersion, ":MAGISKSU") {
		t.Fatalf("Info = %+v", in)
	}

	t.Run("shell", func(t *testing.T) {
		res, err := v.d.Shell(c, "exit 3")
		if err != nil || res.ExitCode != 3 {
			t.Fatalf("exit 3: %+v %v", res, err)
		}
		res, err = v.d.Shell(c, "echo out; echo err >&2; exit 1")
		if err != nil || string(res.Stdout) != "out\n" || string(res.Stderr) != "err\n" || res.ExitCode != 1 {
			t.Fatalf("separate stderr: %+v %v", res, err)
		}
		if got := mustShell(t, v.d, "getprop ro.product.model"); got != "AgentLab Virtual Device\n" {
			t.Fatalf("getprop = %q", got)
		}
	})
	t.Run("su", func(t *testing.T) {
		res, err := v.d.Su(c, "id -u")
		if err != nil || strings.TrimSpace(string(res.Stdout)) != "0" {
			t.Fatalf("Su(id -u) = %+v %v", res, err)
		}
		if got := mustShell(t, v.d, "su 10123 -c id"); !strings.HasPrefix(got, "uid=10123") {
			t.Fatalf("su 10123 -c id = %q", got)
		}
		if got := mustShell(t, v.d, "id -u"); got != "2000\n" {
			t.Fatalf("shell uid = %q", got)
		}
	})
	t.Run("files", func(t *testing.T) {
		if err := v.d.Push(c, strings.NewReader("#!/system/bin/sh\necho hi\n"), "/data/local/tmp/hi.sh", 0o750); err != nil {
			t.Fatal(err)
		}
		fi, err := v.d.Stat(c, "/data/local/tmp/hi.sh")
		if err != nil || fi.Mode.Perm() != 0o750 || !fi.Mode.IsRegular() || fi.Size != 25 {
			t.Fatalf("Stat = %+v %v", fi, err)
		}
		if got := mustShell(t, v.d, "/data/local/tmp/hi.sh"); got != "hi\n" {
			t.Fatalf("pushed script ran: %q", got)
		}
		var b bytes.Buffer
		if err := v.d.Pull(c, "/data/local/tmp/hi.sh", &b); err != nil || !strings.HasSuffix(b.String(), "echo hi\n") {
			t.Fatalf("Pull = %q %v", b.String(), err)
		}
		if _, err := v.d.Stat(c, "/data/local/tmp/nope"); !errors.Is(err, devices.ErrNotExist) {
			t.Fatalf("Stat(missing) = %v", err)
		}
		if fi, err := v.d.Stat(c, "/data/local/tmp"); err != nil || !fi.Mode.IsDir() {
			t.Fatalf("Stat(dir) = %+v %v", fi, err)
		}
	})
	t.Run("facilities", func(t *testing.T) {
		b, err := v.d.Battery(c)
		if err != nil || b.Present {
			t.Fatalf("Battery = %+v %v; a virtual device has none", b, err)
		}
		free, err := v.d.FreeStorage(c, "/data")
		if err != nil || free <= 0 {
			t.Fatalf("FreeStorage = %d %v", free, err)
		}
		if _, err := v.d.Screenshot(c); !errors.Is(err, devices.ErrUnsupported) {
			t.Fatalf("Screenshot = %v", err)
		}
		if _, err := exec.LookPath("logcat"); err != nil {
			if _, err := v.d.Logs(c, time.Now().Add(-time.Minute)); !errors.Is(err, devices.ErrUnsupported) {
				t.Fatalf("Logs = %v", err)
			}
		}
	})
	t.Run("sockets", func(t *testing.T) {
		mustShell(t, v.d, "vdevtool serve localabstract:lab-echo >/dev/null 2>&1 &")
		// The echo server answers with the connecting uid, then echoes.
		echo := func(conn net.Conn) (string, error) {
			defer conn.Close()
			conn.SetDeadline(time.Now().Add(5 * time.Second))
			fmt.Fprintf(conn, "ping\n")
			br := bufio.NewReader(conn)
			l1, err := br.ReadString('\n')
			if err != nil {
				return "", err
			}
			l2, err := br.ReadString('\n')
			return l1 + l2, err
		}
		var port int
		require.EventuallyWithT(t, func(ct *assert.CollectT) {
			p, err := v.d.Forward(c, "tcp:0", "localabstract:lab-echo")
			require.NoError(ct, err, "Forward")
			port = p
			conn, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(p))
			require.NoError(ct, err)
			got, err := echo(conn)
			require.NoError(ct, err)
			assert.Equal(ct, "uid=2000\nping\n", got, "through the forward")
		}, 10*time.Second, 50*time.Millisecond, "waiting for echo server via forward")
		if err := v.d.RemoveForward(c, "tcp:"+strconv.Itoa(port)); err != nil {
			t.Fatal(err)
		}
		conn, err := v.d.Dial(c, "localabstract:lab-echo")
		if err != nil {
			t.Fatal(err)
		}
		if got, err := echo(conn); err != nil || got != "uid=2000\nping\n" {
			t.Fatalf("through Dial: %q %v", got, err)
		}
		if _, err := v.d.Dial(c, "localabstract:nobody-listens"); err == nil {
			t.Fatal("Dial to a missing socket succeeded")
		}

		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				fmt.Fprintf(c, "hello from host\n")
				c.Close()
			}
		}()
		hostPort := ln.Addr().(*net.TCPAddr).Port
		rp, err := v.d.Reverse(c, "tcp:0", "tcp:"+strconv.Itoa(hostPort))
		if err != nil || rp <= 0 {
			t.Fatalf("Reverse = %d %v", rp, err)
		}
		if got := mustShell(t, v.d, fmt.Sprintf("vdevtool connect tcp:%d </dev/null", rp)); got != "hello from host\n" {
			t.Fatalf("through the reverse: %q", got)
		}
		if err := v.d.RemoveReverse(c, "tcp:"+strconv.Itoa(rp)); err != nil {
			t.Fatal(err)
		}
		if err := v.d.RemoveReverse(c, "tcp:"+strconv.Itoa(rp)); err == nil {
			t.Fatal("removing a removed reverse succeeded")
		}
	})
}

// TestVirtualPushPull50MB: one 50 MB file each way, byte-identical.
func TestVirtualPushPull50MB(t *testing.T) {
	t.Parallel()
	v := startVirtual(t, virtual.RootMagisk)
	c := ctx(t, 2*time.Minute)
	src := filepath.Join(t.TempDir(), "blob")
	f, err := os.Create(src)
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	if _, err := io.CopyN(io.MultiWriter(f, h), rand.Reader, 50<<20); err != nil {
		t.Fatal(err)
	}
	want := h.Sum(nil)
	f.Seek(0, io.SeekStart)
	if err := v.d.Push(c, f, "/data/local/tmp/blob", 0o644); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if fi, err := v.d.Stat(c, "/data/local/tmp/blob"); err != nil || fi.Size != 50<<20 {
		t.Fatalf("Stat = %+v %v", fi, err)
	}
	h.Reset()
	if err := v.d.Pull(c, "/data/local/tmp/blob", h); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(h.Sum(nil), want) {
		t.Fatal("pulled file differs from the pushed one")
	}
}

// TestVirtualRootMethods: Info detects each root method; Su works through
// it; adb root and unroot switch the shell's uid; no root is ErrNoRoot.
func TestVirtualRootMethods(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		method string
		want   devices.RootMethod
	}{
		{virtual.RootMagisk, devices.RootMagisk},
		{virtual.RootKernelSU, devices.RootKernelSU},
		{virtual.RootADB, devices.RootADB},
		{virtual.RootNone, devices.RootNone},
	} {
		t.Run(tt.method, func(t *testing.T) {
			t.Parallel()
			v := startVirtual(t, tt.method)
			c := ctx(t, time.Minute)
			in, err := v.d.Info(c)
			if err != nil || in.Root != tt.want {
				t.Fatalf("Info.Root = %q %v, want %q", in.Root, err, tt.want)
			}
			res, err := v.d.Su(c, "id -u")
			if tt.want == devices.RootNone {
				if !errors.Is(err, devices.ErrNoRoot) {
					t.Fatalf("Su on a device without root = %+v %v", res, err)
				}
				_, err := v.d.SuStream(c, "cat")
				require.ErrorIs(t, err, devices.ErrNoRoot)
				if err := v.d.Root(c); !errors.Is(err, devices.ErrNoRoot) {
					t.Fatalf("adb root on a user build = %v", err)
				}
				return
			}
			if err != nil || strings.TrimSpace(string(res.Stdout)) != "0" {
				t.Fatalf("Su(id -u) = %+v %v", res, err)
			}
			suStreamConverses(t, v.d)
			if tt.want != devices.RootADB {
				return
			}
			if got := mustShell(t, v.d, "id -u"); got != "0\n" {
				t.Fatalf("after Su on adb-root the shell is %q", got)
			}
			if err := v.d.Unroot(c); err != nil {
				t.Fatal(err)
			}
			if got := mustShell(t, v.d, "id -u"); got != "2000\n" {
				t.Fatalf("after Unroot the shell is %q", got)
			}
			if err := v.d.Root(c); err != nil {
				t.Fatal(err)
			}
			if got := mustShell(t, v.d, "id -u"); got != "0\n" {
				t.Fatalf("after Root the shell is %q", got)
			}
		})
	}
}

// suStreamConverses holds a conversation with a root shell over one
// SuStream: each line written is answered before the next is sent, the
// answers run as root, bytes pass unchanged (no PTY echo, no CRLF), and
// closing the stream ends the command.
func suStreamConverses(t *testing.T, d *adb.Device) {
	t.Helper()
	c := ctx(t, 30*time.Second)
	conn, err := d.SuStream(c, `echo $$; while read -r l; do echo "$(id -u):$l"; done`)
	require.NoError(t, err)
	r := bufio.NewReader(conn)
	pid, err := r.ReadString('\n')
	require.NoError(t, err)
	for _, line := range []string{"one", `two 'quoted' "x"`, "tab\tthree"} {
		_, err := io.WriteString(conn, line+"\n")
		require.NoError(t, err)
		got, err := r.ReadString('\n')
		require.NoError(t, err)
		require.Equal(t, "0:"+line+"\n", got)
	}
	// adbd hangs up on a command whose stream closed, as on a phone: a
	// lab that drops its session leaves no root process behind.
	require.NoError(t, conn.Close())
	require.Eventually(t, func() bool {
		res, err := d.Su(c, "kill -0 "+strings.TrimSpace(pid))
		return err == nil && res.ExitCode != 0
	}, 10*time.Second, 20*time.Millisecond, "the command outlived its stream")
}

// moduleZip writes a module whose service.sh leaves a marker.
func moduleZip(t testing.TB, id string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), id+".zip")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	zw := zip.NewWriter(f)
	for name, body := range map[string]string{
		"module.prop": "id=" + id + "\nname=Lab " + id + "\nversion=v1\nversionCode=1\nauthor=lab\ndescription=test\n",
		"service.sh":  "MODDIR=${0%/*}\necho \"ran in $MODDIR\" > /data/local/tmp/" + id + ".service\n",
		"META-INF/com/google/android/update-binary":  "#!/sbin/sh\n",
		"META-INF/com/google/android/updater-script": "#MAGISK\n",
	} {
		w, _ := zw.Create(name)
		io.WriteString(w, body)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	return p
}

// TestVirtualRebootAndModule: InstallModule stages the module; Reboot and
// WaitBoot bring the device back with /data intact and, where a root
// solution runs boot scripts (Magisk, KernelSU), service.sh ran.
func TestVirtualRebootAndModule(t *testing.T) {
	t.Parallel()
	for _, method := range []string{virtual.RootMagisk, virtual.RootKernelSU, virtual.RootADB} {
		t.Run(method, func(t *testing.T) {
			t.Parallel()
			v := startVirtual(t, method)
			c := ctx(t, 2*time.Minute)
			if err := v.d.InstallModule(c, moduleZip(t, "labmod")); err != nil {
				t.Fatal(err)
			}
			res, err := v.d.Su(c, "cat /data/adb/modules_update/labmod/module.prop; test -f /data/adb/modules/labmod/update && echo flagged")
			if err != nil || !strings.Contains(string(res.Stdout), "id=labmod") || !strings.Contains(string(res.Stdout), "flagged") {
				t.Fatalf("staged module: %+v %v", res, err)
			}
			mustShell(t, v.d, "echo kept > /data/local/tmp/keep.txt")
			initBefore := v.vd.InitPID()
			if err := v.d.Reboot(c); err != nil {
				t.Fatal(err)
			}
			if err := v.d.WaitBoot(c); err != nil {
				t.Fatal(err)
			}
			if v.vd.InitPID() == initBefore {
				t.Fatal("WaitBoot returned before the device rebooted")
			}
			if got := mustShell(t, v.d, "cat /data/local/tmp/keep.txt"); got != "kept\n" {
				t.Fatalf("/data after reboot: %q", got)
			}
			if method == virtual.RootADB {
				// No root solution runs boot scripts on a plain debuggable build.
				return
			}
			require.Eventually(t, func() bool {
				res, err := v.d.Shell(c, "cat /data/local/tmp/labmod.service")
				return err == nil && strings.HasPrefix(string(res.Stdout), "ran in /data/adb/modules/labmod")
			}, 15*time.Second, 50*time.Millisecond, "waiting for service.sh marker")
		})
	}
}
