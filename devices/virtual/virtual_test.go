//go:build linux

package virtual_test

import (
	"archive/zip"
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/electricbubble/gadb"
	"github.com/stretchr/testify/require"

	"github.com/agentoslab/agentlab/devices/virtual"
	"github.com/agentoslab/agentlab/internal/testenv"
)

// TestADBShellAndProps covers what a lab does first with a phone: connect,
// list it with its product/model/device, run shell commands with exit
// codes, read properties.
func TestADBShellAndProps(t *testing.T) {
	t.Parallel()
	d := startDevice(t, &virtual.Options{SDK: 34})
	a := newADB(t)
	a.connect(d)

	devs := a.must("devices", "-l")
	re := regexp.MustCompile(regexp.QuoteMeta(d.Serial()) + `\s+device product:agentlab_vdev model:AgentLab_Virtual_Device device:vdev`)
	if !re.MatchString(devs) {
		t.Fatalf("adb devices -l does not list the device with product/model/device:\n%s", devs)
	}
	tests := []struct {
		name     string
		cmd      string
		wantOut  string
		wantCode int
	}{
		{"exit code", "exit 3", "", 3},
		{"sdk", "getprop ro.build.version.sdk", "34", 0},
		{"release", "getprop ro.build.version.release", "14", 0},
		{"abi", "getprop ro.product.cpu.abi", map[string]string{"amd64": "x86_64", "arm64": "arm64-v8a"}[runtime.GOARCH], 0},
		{"boot completed", "getprop sys.boot_completed", "1", 0},
		{"shell uid", "id -u", "2000", 0},
		{"stderr and status", "echo err >&2; exit 42", "err", 42},
		{"getprop default", "getprop no.such.prop fallback", "fallback", 0},
		{"setprop denied for shell", "setprop ro.product.model x; echo $?", "1", 0},
		{"no screencap", "screencap -p /sdcard/s.png", "not found", 127},
		{"su as root", "su -c id -u", "0", 0},
		{"su as app uid", "su 10123 -c id", "uid=10123 gid=10123", 0},
		{"su exit code", "su -c 'exit 9'", "", 9},
		{"su version", "su -v; su -V", "27.0:MAGISKSU\n27000", 0},
		{"magisk version", "magisk -c", "27.0:MAGISK:R (27000)", 0},
		{"magisk needs root", "magisk --install-module /x.zip", "Run this command with root", 1},
		{"hostname", "hostname", "localhost", 0},
		{"pid namespace", "cat /proc/1/cmdline", "agentlab-vdevice-init", 0},
		{"lo is up", "cat /sys/class/net/lo/operstate", "unknown", 0},
		{"data is private", "ls /data/adb", "Permission denied", 2},
	}
	for _, tt := range tests {
		out, code := a.shell(d, tt.cmd)
		if code != tt.wantCode || !strings.Contains(strings.TrimSpace(out), tt.wantOut) {
			t.Errorf("%s: adb shell %q = exit %d %q; want exit %d containing %q", tt.name, tt.cmd, code, out, tt.wantCode, tt.wantOut)
		}
	}

	// An interactive shell reads stdin; -tt forces a pty, as for a person
	// at a terminal.
	if out, code := a.runInput("id -u\nexit 6\n", "-s", d.Serial(), "shell"); code != 6 || out != "2000\n" {
		t.Errorf("interactive shell on a pipe: exit %d %q", code, out)
	}
	if out, code := a.runInput("tty; exit 4\n", "-s", d.Serial(), "shell", "-tt"); code != 4 || !strings.Contains(out, "/dev/pts/0") {
		t.Errorf("interactive shell on a pty: exit %d %q", code, out)
	}

	// getprop without a name lists Android's "[key]: [value]" lines.
	all := a.mustShell(d, "getprop")
	for _, want := range []string{"[ro.product.model]: [AgentLab Virtual Device]", "[ro.debuggable]: [1]",
		"[ro.build.type]: [userdebug]", "[ro.product.manufacturer]: [AgentOS Lab]", "[ro.serialno]: [" + d.Name() + "]"} {
		if !strings.Contains(all, want+"\n") {
			t.Errorf("getprop lacks %q", want)
		}
	}
	// The superuser policy, seeded as a lab does on Magisk: deny the shell
	// user, and su says so; allow it again.
	a.mustShell(d, `su -c "magisk --sqlite 'REPLACE INTO policies (uid,policy,until,logging,notification) VALUES(2000,1,0,1,1)'"`)
	if out, code := a.shell(d, "su -c id"); code != 1 || !strings.Contains(out, "Permission denied") {
		t.Errorf("su after denying uid 2000: exit %d %q", code, out)
	}
	if out, code := a.run("-s", d.Serial(), "root"); code != 0 || !strings.Contains(out, "restarting adbd as root") {
		t.Fatalf("adb root: %q", out)
	}
	a.must("-s", d.Serial(), "wait-for-device")
	a.mustShell(d, `magisk --sqlite 'REPLACE INTO policies (uid,policy,until,logging,notification) VALUES(2000,2,0,1,1)'`)
	a.must("-s", d.Serial(), "unroot")
	a.must("-s", d.Serial(), "wait-for-device")
	if out := strings.TrimSpace(a.mustShell(d, "su -c id -u")); out != "0" {
		t.Errorf("su after allowing uid 2000 again: %q", out)
	}

	// setprop by the shell user, and persist.* across a reboot is tested
	// in TestRebootModuleAndPersistence.
	a.mustShell(d, "setprop debug.vdev.x hello")
	if got := strings.TrimSpace(a.mustShell(d, "getprop debug.vdev.x")); got != "hello" {
		t.Errorf("setprop/getprop: %q", got)
	}
}

// deviceTmp is Android's temp directory that the shell user may write.
const deviceTmp = "/data/local/tmp"

// TestPushPull50MB: adb push and pull of a 50 MB file are byte-identical,
// and the pushed file belongs to the shell user with the pushed mode.
func TestPushPull50MB(t *testing.T) {
	t.Parallel()
	d := startDevice(t, nil)
	a := newADB(t)
	a.connect(d)
	dir := t.TempDir()
	data := make([]byte, 50<<20)
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i+8 <= len(data); i += 8 {
		v := r.Uint64()
		for j := range 8 {
			data[i+j] = byte(v >> (8 * j))
		}
	}
	src := writeFile(t, dir, "big.bin", data)
	if err := os.Chmod(src, 0o640); err != nil {
		t.Fatal(err)
	}
	// Paths inside the device, under Android's shell-writable temp dir.
	big := path.Join(deviceTmp, "sub", "big.bin")
	a.must("-s", d.Serial(), "push", src, big)
	if got := fields(a.mustShell(d, "stat -c '%u %a %s' "+big)); got != "2000 640 52428800" {
		t.Errorf("pushed file owner/mode/size = %q", got)
	}
	dst := filepath.Join(dir, "back.bin")
	a.must("-s", d.Serial(), "pull", big, dst)
	back, err := os.ReadFile(dst)
	if err != nil {
		t.Fatal(err)
	}
	if sha256.Sum256(back) != sha256.Sum256(data) {
		t.Fatalf("pulled file differs from pushed (%d bytes vs %d)", len(back), len(data))
	}
	// The host-side view of the device's /data is the same file.
	onHost, err := os.ReadFile(filepath.Join(d.Root(), big))
	if err != nil || !bytes.Equal(onHost, data) {
		t.Fatalf("device root on host does not hold the pushed file: %v", err)
	}
	// A directory with a nested file and a symlink: parents are created
	// (fixed_push_mkdir) and the link arrives as a link.
	tree := filepath.Join(dir, "tree")
	os.MkdirAll(filepath.Join(tree, "a", "b"), 0o755)
	writeFile(t, tree, "x", []byte("1\n"))
	writeFile(t, filepath.Join(tree, "a", "b"), "y", []byte("2\n"))
	if err := os.Symlink("x", filepath.Join(tree, "lnk")); err != nil {
		t.Fatal(err)
	}
	a.must("-s", d.Serial(), "push", tree, deviceTmp+"/")
	onDevice := path.Join(deviceTmp, "tree")
	if got := fields(a.mustShell(d, "cat "+path.Join(onDevice, "a", "b", "y")+"; readlink "+path.Join(onDevice, "lnk"))); got != "2 x" {
		t.Errorf("pushed tree: %q", got)
	}
	a.must("-s", d.Serial(), "pull", onDevice, filepath.Join(dir, "back"))
	if b, err := os.ReadFile(filepath.Join(dir, "back", "a", "b", "y")); err != nil || string(b) != "2\n" {
		t.Errorf("pulled tree: %q %v", b, err)
	}

	// Errors come back as adb's messages.
	if out, code := a.run("-s", d.Serial(), "pull", "/data/local/tmp/missing", dst); code == 0 || !strings.Contains(out, "No such file or directory") {
		t.Errorf("pull of a missing file: exit %d %q", code, out)
	}
	if out, code := a.run("-s", d.Serial(), "push", src, "/data/adb/x"); code == 0 || !strings.Contains(out, "Permission denied") {
		t.Errorf("push into /data/adb as shell: exit %d %q", code, out)
	}
}

// TestForwardAndReverse: adb forward reaches a server inside the device
// (whose SO_PEERCRED sees adbd as uid 2000), adb reverse reaches a server
// on the host.
func TestForwardAndReverse(t *testing.T) {
	t.Parallel()
	d := startDevice(t, nil)
	a := newADB(t)
	a.connect(d)

	// A server inside the device, started with a shell command.
	a.mustShell(d, "vdevtool serve localabstract:lab-echo >/dev/null 2>&1 &")
	var port string
	require.Eventually(t, func() bool {
		out, code := a.run("-s", d.Serial(), "forward", "tcp:0", "localabstract:lab-echo")
		port = strings.TrimSpace(out)
		if code != 0 {
			return false
		}
		c, err := net.Dial("tcp", "127.0.0.1:"+port)
		if err != nil {
			return false
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(5 * time.Second))
		fmt.Fprintf(c, "ping\n")
		br := bufio.NewReader(c)
		l1, _ := br.ReadString('\n')
		l2, _ := br.ReadString('\n')
		if l1 == "" {
			return false
		}
		if l1 != "uid=2000\n" || l2 != "ping\n" {
			t.Fatalf("through the forward: %q %q; want uid=2000 (adbd's identity) and the echo", l1, l2)
		}
		return true
	}, 10*time.Second, 20*time.Millisecond, "waiting for forward")
	if out := a.must("forward", "--list"); !strings.Contains(out, "tcp:"+port+" localabstract:lab-echo") {
		t.Errorf("forward --list: %q", out)
	}

	// A server on the host, reached from inside the device.
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
	a.must("-s", d.Serial(), "reverse", "tcp:7100", fmt.Sprintf("tcp:%d", hostPort))
	if out := a.mustShell(d, "vdevtool connect tcp:7100 </dev/null"); out != "hello from host\n" {
		t.Errorf("through the reverse: %q", out)
	}
	if out := a.must("-s", d.Serial(), "reverse", "--list"); !strings.Contains(out, fmt.Sprintf("tcp:7100 tcp:%d", hostPort)) {
		t.Errorf("reverse --list: %q", out)
	}
	out := a.must("-s", d.Serial(), "reverse", "tcp:0", fmt.Sprintf("tcp:%d", hostPort))
	if p, err := strconv.Atoi(strings.TrimSpace(out)); err != nil || p <= 0 {
		t.Errorf("reverse tcp:0 printed %q, want the port", out)
	}
	a.must("-s", d.Serial(), "reverse", "--remove", "tcp:7100")
	if out, code := a.run("-s", d.Serial(), "reverse", "--remove", "tcp:7100"); code == 0 || !strings.Contains(out, "not found") {
		t.Errorf("removing a missing reverse: exit %d %q", code, out)
	}
	if out, _ := a.shell(d, "vdevtool connect tcp:7100 </dev/null"); strings.Contains(out, "hello") {
		t.Errorf("removed reverse still answers")
	}
	a.must("-s", d.Serial(), "reverse", "--remove-all")
	if out := a.must("-s", d.Serial(), "reverse", "--list"); strings.TrimSpace(out) != "" {
		t.Errorf("reverse --list after --remove-all: %q", out)
	}
}

// TestRootUnroot: adb root restarts adbd as root (the CLI waits for the
// device to drop and come back), adb unroot goes back to the shell uid; a
// production build refuses.
func TestRootUnroot(t *testing.T) {
	t.Parallel()
	d := startDevice(t, nil)
	a := newADB(t)
	a.connect(d)
	if out := a.must("-s", d.Serial(), "root"); !strings.Contains(out, "restarting adbd as root") {
		t.Fatalf("adb root: %q", out)
	}
	a.must("-s", d.Serial(), "wait-for-device")
	// No /etc/passwd (as on a phone, whose bionic knows the names itself):
	// the host's id prints numbers.
	if out := fields(a.mustShell(d, "id")); !strings.HasPrefix(out, "uid=0 gid=0") {
		t.Errorf("id after adb root: %q", out)
	}
	if out := a.must("-s", d.Serial(), "root"); !strings.Contains(out, "adbd is already running as root") {
		t.Errorf("second adb root: %q", out)
	}
	if out := a.must("-s", d.Serial(), "unroot"); !strings.Contains(out, "restarting adbd as non root") {
		t.Fatalf("adb unroot: %q", out)
	}
	a.must("-s", d.Serial(), "wait-for-device")
	if out := fields(a.mustShell(d, "id")); !strings.HasPrefix(out, "uid=2000 gid=2000") {
		t.Errorf("id after adb unroot: %q", out)
	}

	prod := startDevice(t, &virtual.Options{RootMethod: virtual.RootNone})
	a.connect(prod)
	if out, _ := a.run("-s", prod.Serial(), "root"); !strings.Contains(out, "adbd cannot run as root in production builds") {
		t.Errorf("adb root on a user build: %q", out)
	}
	// No su of ours; the host's setuid su is neutered by nosuid mounts.
	if out, code := a.shell(prod, "su -c id"); code == 0 || strings.Contains(out, "uid=0") {
		t.Errorf("su on a device without root: exit %d %q", code, out)
	}
}

// moduleZip builds a Magisk module zip whose scripts leave markers.
func moduleZip(t testing.TB, id string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), id+".zip")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	zw := zip.NewWriter(f)
	files := map[string]string{
		"module.prop":     "id=" + id + "\nname=Lab Test\nversion=v1\nversionCode=7\nauthor=lab\ndescription=marker module\n",
		"customize.sh":    "ui_print \"- customize ran in $MODPATH\"\n",
		"post-fs-data.sh": "MODDIR=${0%/*}\necho pfd > /data/local/tmp/" + id + ".pfd\nresetprop -n lab." + id + ".pfd done\n",
		"service.sh":      "MODDIR=${0%/*}\necho \"service $(id -u) $MODDIR $MODDIR_ENV\" > /data/local/tmp/" + id + ".service\n",
		"system.prop":     "lab." + id + ".sysprop=yes\n",
		"META-INF/com/google/android/updater-script": "#MAGISK\n",
	}
	for name, body := range files {
		w, err := zw.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(w, body)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	return p
}

// TestRebootModuleAndPersistence: a module installed with magisk
// --install-module through su runs its scripts after adb reboot; /data
// and persist.* properties survive, other properties do not.
func TestRebootModuleAndPersistence(t *testing.T) {
	t.Parallel()
	d := startDevice(t, nil)
	a := newADB(t)
	a.connect(d)
	zipPath := moduleZip(t, "labmod")
	a.must("-s", d.Serial(), "push", zipPath, "/data/local/tmp/m.zip")
	out := a.mustShell(d, "su -c 'magisk --install-module /data/local/tmp/m.zip'")
	for _, want := range []string{"Lab Test", "- customize ran in /data/adb/modules_update/labmod", "- Done"} {
		if !strings.Contains(out, want) {
			t.Errorf("install output lacks %q:\n%s", want, out)
		}
	}
	if out := a.mustShell(d, "su -c 'ls /data/adb/modules/labmod /data/adb/modules_update/labmod'"); !strings.Contains(out, "update") || !strings.Contains(out, "service.sh") {
		t.Errorf("staged module: %q", out)
	}
	if _, code := a.shell(d, "ls /data/local/tmp/labmod.service"); code == 0 {
		t.Fatal("service.sh ran before the reboot")
	}
	a.mustShell(d, "echo kept > /data/local/tmp/keep.txt; setprop persist.lab.kept yes; setprop debug.lab.gone yes")
	oldInit := d.InitPID()

	a.must("-s", d.Serial(), "reboot")
	a.must("-s", d.Serial(), "wait-for-device")
	if d.InitPID() == oldInit {
		t.Errorf("init pid unchanged after reboot")
	}
	select {
	case <-d.Done():
		t.Fatal("Done closed by a reboot")
	default:
	}
	// service.sh is late start, not waited for: poll for its marker.
	var marker string
	require.Eventually(t, func() bool {
		out, code := a.shell(d, "cat /data/local/tmp/labmod.service")
		marker = out
		return code == 0
	}, 10*time.Second, 20*time.Millisecond, "waiting for service.sh marker")
	if want := "service 0 /data/adb/modules/labmod"; !strings.HasPrefix(marker, want) {
		t.Errorf("service.sh marker %q, want prefix %q", marker, want)
	}
	checks := map[string]string{
		"cat /data/local/tmp/keep.txt":        "kept",
		"cat /data/local/tmp/labmod.pfd":      "pfd",
		"getprop lab.labmod.pfd":              "done",
		"getprop lab.labmod.sysprop":          "yes",
		"getprop persist.lab.kept":            "yes",
		"getprop debug.lab.gone":              "",
		"su -c 'ls /data/adb/modules/labmod'": "module.prop\npost-fs-data.sh\nservice.sh\nsystem.prop",
	}
	for cmd, want := range checks {
		if got := strings.TrimSpace(a.mustShell(d, cmd)); got != want {
			t.Errorf("after reboot, %s = %q, want %q", cmd, got, want)
		}
	}
	// The bootloop escape works for the shell user; -n skips the reboot.
	a.mustShell(d, "magisk --remove-modules -n")
	if out, code := a.shell(d, "su -c 'ls /data/adb/modules'"); code == 0 && strings.Contains(out, "labmod") {
		t.Errorf("modules left after --remove-modules: %q", out)
	}
}

// TestKernelSU: ksud installs and lists modules, su reports KernelSU.
func TestKernelSU(t *testing.T) {
	t.Parallel()
	d := startDevice(t, &virtual.Options{RootMethod: virtual.RootKernelSU})
	a := newADB(t)
	a.connect(d)
	if out := strings.TrimSpace(a.mustShell(d, "su -v")); !strings.HasSuffix(out, ":KernelSU") {
		t.Errorf("su -v = %q", out)
	}
	if _, code := a.shell(d, "magisk -v"); code != 127 {
		t.Errorf("magisk exists on a KernelSU device")
	}
	a.must("-s", d.Serial(), "push", moduleZip(t, "ksumod"), "/data/local/tmp/k.zip")
	a.mustShell(d, "su -c '/data/adb/ksud module install /data/local/tmp/k.zip'")
	out := a.mustShell(d, "su -c '/data/adb/ksud module list'")
	if !strings.Contains(out, `"id": "ksumod"`) || !strings.Contains(out, `"update": "true"`) {
		t.Errorf("ksud module list: %s", out)
	}
	a.mustShell(d, "su -c '/data/adb/ksud module disable ksumod'")
	a.must("-s", d.Serial(), "reboot")
	a.must("-s", d.Serial(), "wait-for-device")
	// Disabled: the staged update is active but its scripts do not run.
	out = a.mustShell(d, "su -c '/data/adb/ksud module list'")
	if !strings.Contains(out, `"enabled": "false"`) || !strings.Contains(out, `"update": "false"`) {
		t.Errorf("ksud module list after reboot: %s", out)
	}
	if _, code := a.shell(d, "ls /data/local/tmp/ksumod.pfd"); code == 0 {
		t.Errorf("a disabled module's post-fs-data.sh ran")
	}
}

// TestFourDevices: four devices run at once; killing one's init is seen
// (Done closes) while the other three keep working.
func TestFourDevices(t *testing.T) {
	t.Parallel()
	testenv.NeedRoot(t)
	stateDir := t.TempDir()
	a := newADB(t)
	devs := make([]*virtual.Device, 4)
	var wg sync.WaitGroup
	for i := range devs {
		wg.Go(func() {
			devs[i] = startDevice(t, &virtual.Options{StateDir: stateDir})
		})
	}
	wg.Wait()
	names := map[string]bool{}
	for _, d := range devs {
		if d == nil {
			t.FailNow()
		}
		names[d.Name()] = true
		a.connect(d)
	}
	if len(names) != 4 {
		t.Fatalf("device names not distinct: %v", names)
	}
	for _, d := range devs {
		if got := strings.TrimSpace(a.mustShell(d, "getprop ro.serialno")); got != d.Name() {
			t.Errorf("%s answers as %q", d.Serial(), got)
		}
	}
	list, err := virtual.List(stateDir)
	if err != nil || len(list) != 4 {
		t.Fatalf("List: %v %+v", err, list)
	}
	for _, in := range list {
		if in.State != "running" || in.PID != os.Getpid() || in.Serial == "" {
			t.Errorf("List entry %+v", in)
		}
	}

	victim := devs[0]
	if err := syscall.Kill(victim.InitPID(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case <-victim.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("Done did not close after the init was killed")
	}
	for _, d := range devs[1:] {
		if out := strings.TrimSpace(a.mustShell(d, "echo alive")); out != "alive" {
			t.Errorf("%s after another device died: %q", d.Name(), out)
		}
	}
	if in := infoOf(t, stateDir, victim.Name()); in.State != "stopped" {
		t.Errorf("dead device listed as %+v", in)
	}
	// A dead device's listener is gone.
	if c, err := net.DialTimeout("tcp", victim.Serial(), time.Second); err == nil {
		c.Close()
		t.Errorf("dead device still accepts connections")
	}
}

func infoOf(t testing.TB, stateDir, name string) virtual.Info {
	t.Helper()
	list, err := virtual.List(stateDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range list {
		if in.Name == name {
			return in
		}
	}
	t.Fatalf("%s not listed", name)
	return virtual.Info{}
}

// TestStopLeavesNothingAndReset: Stop ends every process of the device;
// the device can not be started twice; Reset wipes /data of a stopped
// device and refuses a running one.
func TestStopLeavesNothingAndReset(t *testing.T) {
	t.Parallel()
	stateDir := t.TempDir()
	d := startDevice(t, &virtual.Options{StateDir: stateDir, Name: "keepme"})
	if _, err := virtual.Start(context.Background(), &virtual.Options{StateDir: stateDir, Name: "keepme"}); err == nil || !strings.Contains(err.Error(), "running") {
		t.Fatalf("second start of a running device: %v", err)
	}
	if err := virtual.Reset(context.Background(), stateDir, "keepme"); err == nil {
		t.Fatal("Reset of a running device succeeded")
	}
	initPID := d.InitPID()
	writeFile(t, filepath.Join(d.Root(), "data"), "marker", []byte("x"))
	if err := d.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := d.Stop(context.Background()); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
	select {
	case <-d.Done():
	default:
		t.Fatal("Done open after Stop")
	}
	if err := syscall.Kill(initPID, 0); err == nil {
		t.Errorf("init %d still exists after Stop", initPID)
	}
	// No process of the host still runs inside the device's root.
	if leftovers := processesUnder(t, d.Root()); len(leftovers) > 0 {
		t.Errorf("processes left after Stop: %v", leftovers)
	}
	if in := infoOf(t, stateDir, "keepme"); in.State != "stopped" {
		t.Errorf("stopped device listed as %+v", in)
	}
	if err := virtual.Reset(context.Background(), stateDir, "keepme"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(d.Root(), "data", "marker")); !os.IsNotExist(err) {
		t.Errorf("Reset left /data/marker: %v", err)
	}
	if err := virtual.Reset(context.Background(), stateDir, "nosuch"); err == nil {
		t.Errorf("Reset of a missing device succeeded")
	}
}

// processesUnder lists host processes whose cwd or root is inside dir.
func processesUnder(t testing.TB, dir string) []string {
	t.Helper()
	entries, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		for _, link := range []string{"root", "cwd"} {
			target, err := os.Readlink(filepath.Join("/proc", e.Name(), link))
			if err == nil && strings.HasPrefix(target, dir) {
				out = append(out, e.Name())
			}
		}
	}
	return out
}

// TestStartWithoutRoot: without CAP_SYS_ADMIN Start fails with one plain
// line saying what is missing. The check runs in a child of this test
// binary under an unprivileged uid.
func TestStartWithoutRoot(t *testing.T) {
	t.Parallel()
	if os.Getenv("VDEVICE_TEST_NOROOT") == "1" {
		_, err := virtual.Start(context.Background(), &virtual.Options{StateDir: os.Getenv("VDEVICE_TEST_DIR")})
		fmt.Println(err)
		return
	}
	testenv.NeedRoot(t)
	dir := t.TempDir()
	os.Chmod(dir, 0o777)
	os.Chmod(filepath.Dir(dir), 0o777)
	// A copy of this binary the unprivileged user may run.
	exe, err := os.ReadFile("/proc/self/exe")
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "virtual.test")
	if err := os.WriteFile(bin, exe, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-test.run=^TestStartWithoutRoot$")
	cmd.Env = append(os.Environ(), "VDEVICE_TEST_NOROOT=1", "VDEVICE_TEST_DIR="+dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	want := "virtual device needs root (CAP_SYS_ADMIN) to create Linux namespaces"
	if !strings.Contains(string(out), want) {
		t.Fatalf("unprivileged Start said %q, want %q", out, want)
	}
}

// TestGadb: gadb v0.1.0, the lab's adb client library, sees and uses the
// device through a real adb server.
func TestGadb(t *testing.T) {
	t.Parallel()
	d := startDevice(t, nil)
	a := newADB(t)
	a.connect(d)
	client, err := gadb.NewClientWith("127.0.0.1", a.srv.Port())
	if err != nil {
		t.Fatal(err)
	}
	devs, err := client.DeviceList()
	if err != nil {
		t.Fatal(err)
	}
	var dev *gadb.Device
	for i := range devs {
		if devs[i].Serial() == d.Serial() {
			dev = &devs[i]
		}
	}
	if dev == nil {
		t.Fatalf("gadb DeviceList does not show %s (%d devices)", d.Serial(), len(devs))
	}
	if info := dev.DeviceInfo(); info["model"] != "AgentLab_Virtual_Device" || info["product"] != "agentlab_vdev" {
		t.Errorf("gadb device info %v", info)
	}
	out, err := dev.RunShellCommand("getprop", "ro.product.device")
	if err != nil || strings.TrimSpace(out) != "vdev" {
		t.Errorf("RunShellCommand: %q %v", out, err)
	}
	payload := []byte("pushed by gadb\n")
	if err := dev.Push(bytes.NewReader(payload), "/data/local/tmp/gadb.txt", time.Now()); err != nil {
		t.Fatalf("Push: %v", err)
	}
	var buf bytes.Buffer
	if err := dev.Pull("/data/local/tmp/gadb.txt", &buf); err != nil || !bytes.Equal(buf.Bytes(), payload) {
		t.Fatalf("Pull: %q %v", buf.Bytes(), err)
	}
	entries, err := dev.List("/data/local/tmp")
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, e := range entries {
		found = found || e.Name == "gadb.txt"
	}
	if !found {
		t.Errorf("List does not show the pushed file: %+v", entries)
	}
	if state, err := dev.State(); err != nil || state != gadb.StateOnline {
		t.Errorf("State: %v %v", state, err)
	}
}
