package emulator

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentoslab/agentlab/devices/adb"
	"github.com/agentoslab/agentlab/devices/adb/adbtest"
)

// The fake engine is shared by the whole binary; these tests run one at
// a time.

func bootedDevice(serial string) *adbtest.Device {
	return &adbtest.Device{Serial: serial, Product: "agentlab_vdev", Model: "AgentLab", Name: "vdev", Features: []string{"shell_v2"},
		Shell: func(cmd string) (string, string, int) {
			if strings.HasPrefix(cmd, "getprop sys.boot_completed") {
				return "1\n", "", 0
			}
			return "", "", 0
		}}
}

func newFakeADB(t *testing.T) *adbtest.Server {
	t.Helper()
	srv, err := adbtest.NewServer()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv
}

func TestContainerStartPublishedPort(t *testing.T) {
	engine.reset("41234", false)
	fadb := newFakeADB(t)
	fadb.AddDevice(bootedDevice("127.0.0.1:41234"))
	p, err := NewContainerProvider(&ContainerOptions{
		Image: "emulator:34", RunID: "run-1", KVM: true, CapAdd: []string{"NET_ADMIN"},
		Server: adb.NewServer(fadb.Addr(), nil), StartTimeout: 20 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	c, err := p.Start(ctx, "emu-a")
	if err != nil {
		t.Fatalf("Start: %v (engine saw %v, unknown %v)", err, engine.log(), engine.unknown)
	}
	if c.Serial != "127.0.0.1:41234" || c.Device.Serial() != c.Serial {
		t.Fatalf("serial = %s", c.Serial)
	}
	live := engine.live()
	if len(live) != 1 {
		t.Fatalf("containers = %d", len(live))
	}
	fc := live[0]
	if fc.Labels[LabelRun] != "run-1" || fc.Labels[LabelDevice] != "emu-a" || !strings.Contains(fc.Labels[LabelOwner], "/"+strconv.Itoa(os.Getpid())+"/") {
		t.Fatalf("labels = %v", fc.Labels)
	}
	hc, _ := fc.Create["HostConfig"].(map[string]any)
	if devs, _ := hc["Devices"].([]any); len(devs) != 1 || devs[0].(map[string]any)["PathOnHost"] != "/dev/kvm" {
		t.Fatalf("devices = %v; want /dev/kvm mapped", hc["Devices"])
	}
	// The Docker client spells capabilities with the CAP_ prefix.
	if caps, _ := hc["CapAdd"].([]any); !slices.Contains(caps, any("NET_ADMIN")) && !slices.Contains(caps, any("CAP_NET_ADMIN")) {
		t.Fatalf("CapAdd = %v", hc["CapAdd"])
	}
	if _, ok := fc.Create["ExposedPorts"].(map[string]any)["5555/tcp"]; !ok {
		t.Fatalf("ExposedPorts = %v", fc.Create["ExposedPorts"])
	}
	if !slices.Contains(fadb.Requests(), "host:connect:127.0.0.1:41234") {
		t.Fatalf("adb requests = %v; want adb connect", fadb.Requests())
	}
	if err := c.Terminate(ctx); err != nil {
		t.Fatal(err)
	}
	if len(engine.live()) != 0 {
		t.Fatal("container left after Terminate")
	}
	if !slices.Contains(fadb.Requests(), "host:disconnect:127.0.0.1:41234") {
		t.Fatalf("adb requests = %v; want adb disconnect", fadb.Requests())
	}
}

func TestContainerStartHostNetwork(t *testing.T) {
	engine.reset("", false)
	fadb := newFakeADB(t)
	fadb.AddDevice(bootedDevice("127.0.0.1:15601"))
	p, err := NewContainerProvider(&ContainerOptions{
		Image: "vdevice:latest", HostNetwork: true, ADBPort: 15601, CapAdd: []string{"SYS_ADMIN"},
		SecurityOpt: []string{"seccomp=unconfined"}, Server: adb.NewServer(fadb.Addr(), nil), StartTimeout: 20 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	c, err := p.Start(context.Background(), "vd-a")
	if err != nil {
		t.Fatalf("Start: %v (unknown %v)", err, engine.unknown)
	}
	defer c.Terminate(context.Background())
	hc, _ := engine.live()[0].Create["HostConfig"].(map[string]any)
	if hc["NetworkMode"] != "host" || c.Serial != "127.0.0.1:15601" {
		t.Fatalf("NetworkMode = %v, serial %s", hc["NetworkMode"], c.Serial)
	}
	if ep, _ := engine.live()[0].Create["ExposedPorts"].(map[string]any); len(ep) != 0 {
		t.Fatalf("host network must publish nothing, got %v", ep)
	}
}

func TestContainerExitsEarly(t *testing.T) {
	engine.reset("41235", true)
	fadb := newFakeADB(t)
	fadb.OnConnect = func(a string) string { return "failed to connect to " + a }
	p, err := NewContainerProvider(&ContainerOptions{Image: "vdevice:latest", Server: adb.NewServer(fadb.Addr(), nil), StartTimeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Start(context.Background(), "vd-b")
	if !errors.Is(err, ErrContainerExited) || !strings.Contains(err.Error(), "no CAP_SYS_ADMIN") {
		t.Fatalf("Start = %v; want ErrContainerExited with the container's last words", err)
	}
	if len(engine.live()) != 0 {
		t.Fatal("failed container not removed")
	}
}

func TestNewContainerProviderValidates(t *testing.T) {
	for _, o := range []*ContainerOptions{nil, {}, {Image: "x", Build: &Build{Context: "."}}, {Image: "x", ADBPort: 70000}} {
		if _, err := NewContainerProvider(o); err == nil {
			t.Errorf("NewContainerProvider(%+v) accepted", o)
		}
	}
	p, err := NewContainerProvider(&ContainerOptions{Image: "x"})
	if err != nil || len(p.RunID()) < 20 {
		t.Fatalf("default run id %q, %v", p.RunID(), err)
	}
}

func TestReap(t *testing.T) {
	engine.reset("", false)
	host, _ := os.Hostname()
	// A process that has exited: its pid names no live process with that
	// start time.
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	deadOwner := host + "/" + strconv.Itoa(dead.Process.Pid) + "/1"
	a1 := engine.add(map[string]string{LabelRun: "run-a", LabelOwner: owner()})
	a2 := engine.add(map[string]string{LabelRun: "run-a", LabelOwner: owner()})
	b := engine.add(map[string]string{LabelRun: "run-b", LabelOwner: deadOwner})
	other := engine.add(map[string]string{LabelRun: "run-c", LabelOwner: "elsewhere/1/1"})
	foreign := engine.add(map[string]string{"com.example": "x"})

	n, err := Reap(context.Background(), "run-a")
	if err != nil || n != 2 {
		t.Fatalf("Reap = %d, %v", n, err)
	}
	n, err = ReapOrphans(context.Background())
	if err != nil || n != 1 {
		t.Fatalf("ReapOrphans = %d, %v", n, err)
	}
	var left []string
	for _, c := range engine.live() {
		left = append(left, c.ID)
	}
	if !slices.Equal(left, []string{other, foreign}) {
		t.Fatalf("left %v; want only %s (another host's) and %s (not ours); removed %s %s %s", left, other, foreign, a1, a2, b)
	}
	if _, err := Reap(context.Background(), ""); err == nil {
		t.Fatal("Reap with an empty run id must refuse")
	}
}

func TestOrphaned(t *testing.T) {
	host, _ := os.Hostname()
	me := owner()
	tests := []struct {
		owner string
		want  bool
	}{
		{me, false},
		{host + "/" + strconv.Itoa(os.Getpid()) + "/999999999", true}, // pid reused by another process
		{host + "/2147483646/1", true},
		{"otherhost/1/1", false},
		{"garbage", false},
		{host + "/x/1", false},
	}
	for _, tt := range tests {
		if got := orphaned(tt.owner, host); got != tt.want {
			t.Errorf("orphaned(%q) = %v, want %v", tt.owner, got, tt.want)
		}
	}
}
