package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"
	"github.com/stretchr/testify/require"
	"github.com/testcontainers/testcontainers-go"
	tclog "github.com/testcontainers/testcontainers-go/log"

	"github.com/agentoslab/agentlab/devices"
	"github.com/agentoslab/agentlab/devices/adb"
	"github.com/agentoslab/agentlab/devices/adbserver"
	"github.com/agentoslab/agentlab/devices/emulator"
	"github.com/agentoslab/agentlab/internal/testenv"
)

func TestMain(m *testing.M) {
	// Ryuk's image would come from Docker Hub; run labels and
	// emulator.Reap replace it.
	os.Setenv("TESTCONTAINERS_RYUK_DISABLED", "true")
	tclog.SetDefault(tclog.NewNoopLogger())
	os.Exit(m.Run())
}

// needDocker skips unless a Docker engine answers.
func needDocker(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cli, err := testcontainers.NewDockerClientWithOpts(ctx)
	if err == nil {
		defer cli.Close()
		_, err = cli.Ping(ctx, client.PingOptions{})
	}
	if err != nil {
		t.Skipf("no Docker engine answers (%v); start one with devices/emulator/testdata/start-dockerd.sh", err)
	}
}

// imageContext builds this command as a static binary and lays out a
// FROM scratch image with it and a static busybox as /bin.
func imageContext(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	bb, err := exec.LookPath("busybox")
	if err != nil {
		t.Skip("busybox not on PATH: install the Debian package busybox-static")
	}
	if out, err := exec.Command("sh", "-c", "file -L "+bb+" 2>/dev/null || true").Output(); err == nil && strings.Contains(string(out), "dynamically linked") {
		t.Skip("busybox is dynamically linked; the scratch image needs busybox-static")
	}
	build := exec.Command("go", "build", "-o", filepath.Join(dir, "vdcontainer"), ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	bin := filepath.Join(dir, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(bb)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bin, "busybox"), data, 0o755); err != nil {
		t.Fatal(err)
	}
	list, err := exec.Command(bb, "--list").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, applet := range strings.Fields(string(list)) {
		if applet == "busybox" || strings.ContainsRune(applet, '/') {
			continue
		}
		if err := os.Symlink("busybox", filepath.Join(bin, applet)); err != nil {
			t.Fatal(err)
		}
	}
	dockerfile := "FROM scratch\nCOPY bin/ /bin/\nCOPY vdcontainer /vdcontainer\nENTRYPOINT [\"/vdcontainer\"]\n"
	if err := os.WriteFile(filepath.Join(dir, "Dockerfile"), []byte(dockerfile), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestVirtualDeviceContainer runs the virtual device as a container
// through the container provider against a real Docker engine: built
// FROM scratch, host networking so adb traffic stays on loopback,
// adopted by a private adb server; then reaps it by its run label.
func TestVirtualDeviceContainer(t *testing.T) {
	testenv.NeedVirtualDevices(t)
	needDocker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	dir := imageContext(t)
	as, err := adbserver.Start(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer as.Close()
	srv := adb.NewServer(as.Addr(), nil)
	port := testenv.FreePort(t)
	runID := emulator.NewRunID()
	tag := strings.ToLower(runID)
	p, err := emulator.NewContainerProvider(&emulator.ContainerOptions{
		Build: &emulator.Build{Context: dir, Repo: "agentlab-vdcontainer", Tag: tag, KeepImage: true},
		// adb-root: busybox-static's sh runs its own applets before PATH,
		// so in a busybox-only image "su" would be busybox's, not the
		// device's; adbd's root: service needs no shell tool.
		Cmd:         []string{"--port", strconv.Itoa(port), "--name", "ctr-a", "--root-method", "adb-root"},
		RunID:       runID,
		HostNetwork: true,
		ADBPort:     port,
		// --privileged would do; sandboxes that lack CAP_SYS_RESOURCE
		// refuse it, so ask for what namespaces need.
		CapAdd:       []string{"SYS_ADMIN", "NET_ADMIN"},
		SecurityOpt:  []string{"seccomp=unconfined", "apparmor=unconfined"},
		Server:       srv,
		StartTimeout: 3 * time.Minute,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cli, err := testcontainers.NewDockerClientWithOpts(context.Background())
		if err == nil {
			cli.ImageRemove(context.Background(), "agentlab-vdcontainer:"+tag, client.ImageRemoveOptions{Force: true, PruneChildren: true})
			cli.Close()
		}
	})
	c, err := p.Start(ctx, "ctr-a")
	if err != nil {
		emulator.Reap(context.Background(), runID)
		t.Fatal(err)
	}
	if c.Serial != fmt.Sprintf("127.0.0.1:%d", port) {
		t.Errorf("serial %s", c.Serial)
	}
	in, err := c.Device.Info(ctx)
	if err != nil || in.Product != "agentlab_vdev" || in.Root != devices.RootADB {
		t.Errorf("Info = %+v %v", in, err)
	}
	res, err := c.Device.Shell(ctx, "exit 3")
	if err != nil || res.ExitCode != 3 {
		t.Errorf("Shell(exit 3) = %+v %v", res, err)
	}
	res, err = c.Device.Su(ctx, "id -u")
	if err != nil || strings.TrimSpace(string(res.Stdout)) != "0" {
		t.Errorf("Su(id -u) = %+v %v", res, err)
	}

	// A dead run's leftovers: removed by their label, device gone.
	n, err := emulator.Reap(ctx, runID)
	if err != nil || n != 1 {
		t.Fatalf("Reap = %d, %v", n, err)
	}
	require.Eventually(t, func() bool { _, err := c.Device.Shell(ctx, "true"); return errors.Is(err, devices.ErrDeviceGone) },
		30*time.Second, 200*time.Millisecond, "device still answers after its container was reaped")
	srv.Disconnect(ctx, c.Serial)
}
