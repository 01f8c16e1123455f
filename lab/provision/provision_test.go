package provision

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentoslab/agentlab/devices"
	"github.com/agentoslab/agentlab/devices/virtual"
	"github.com/agentoslab/agentlab/internal/testenv"

	"github.com/agentoslab/agentlab/lab/modelstub"
	"github.com/agentoslab/agentlab/lab/runtimectl"
)

// TestProvisionVirtualDevice provisions a fresh virtual device end to end
// and then again: the second run changes nothing.
func TestProvisionVirtualDevice(t *testing.T) {
	testenv.NeedVirtualDevices(t)
	arts := artifacts(t)
	td := startDevice(t, nil)
	stub, err := modelstub.Start(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer stub.Close()
	token := modelstub.NewToken()
	stub.Bind(token, nil)

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	rec := &lineRecorder{}
	opts := &Options{Model: Model{Stub: &StubModel{Port: stub.Port(), Token: token}}, Desktop: true, Reporter: rec}
	res, err := Provision(ctx, td.dev, arts, opts)
	if err != nil {
		t.Fatalf("provision: %v\nsteps: %+v", err, res.Steps)
	}
	for _, s := range res.Steps {
		t.Logf("first run: %-8s %-6v %s (%s)", s.Name, s.Changed, s.Detail, s.Duration)
	}
	for _, name := range []string{"module", "runtime", "apps", "model", "plugins", "desktop"} {
		if s, ok := res.Step(name); !ok || !s.Changed {
			t.Errorf("first run: step %s did not change anything: %+v", name, s)
		}
	}
	if res.RuntimeVersion != arts.Version || res.ModelBaseURL != modelstub.DeviceBaseURL("", stub.Port(), token) {
		t.Errorf("result %+v", res)
	}
	if len(rec.lines) != 2*len(res.Steps) || rec.lines[0] != "begin probe" {
		t.Errorf("reporter saw %v", rec.lines)
	}

	// What the device now has, through the runtime.
	ctl := runtimectl.New(td.dev, nil)
	st, err := ctl.Status(ctx)
	if err != nil || st.Version != arts.Version {
		t.Fatalf("status: %+v %v", st, err)
	}
	installed, err := ctl.AppList(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range arts.Bundles {
		found := false
		for _, p := range installed {
			if p.Name == b.Package && p.SigningDigest == arts.SigningDigest && p.ContentDigest == b.ContentDigest {
				found = true
			}
		}
		if !found {
			t.Errorf("bundle %s not installed as built", b.Package)
		}
	}
	m, err := ctl.ModelShow(ctx)
	if err != nil || m.BaseURL != modelstub.DeviceBaseURL("", stub.Port(), token) || !m.KeySet || m.Provider != "openai" {
		t.Errorf("model: %+v %v", m, err)
	}
	plugins, err := ctl.PluginsList(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range arts.Bundles {
		if b.Plugin == "" {
			continue
		}
		if pl, ok := findPlugin(plugins, b.Plugin); !ok || !pl.Enabled {
			t.Errorf("plugin %s not enabled: %+v", b.Plugin, pl)
		}
	}
	if ds, err := ctl.DesktopStatus(ctx); err != nil || !ds.Enabled {
		t.Errorf("desktop: %+v %v", ds, err)
	}

	// Again: idempotent.
	again, err := Provision(ctx, td.dev, arts, opts)
	if err != nil {
		t.Fatalf("second provision: %v", err)
	}
	for _, s := range again.Steps {
		t.Logf("second run: %-8s %-6v %s (%s)", s.Name, s.Changed, s.Detail, s.Duration)
	}
	if again.Changed {
		var changed []string
		for _, s := range again.Steps {
			if s.Changed {
				changed = append(changed, s.Name+": "+s.Detail)
			}
		}
		t.Errorf("second run changed: %s", strings.Join(changed, "; "))
	}
}

// TestRootMethods: KernelSU (ksud installs, the reboot starts it) and
// adb-root (copied into place, service.sh run by hand, and again after a
// reboot, since nothing starts modules at boot there).
func TestRootMethods(t *testing.T) {
	testenv.NeedVirtualDevices(t)
	arts := artifacts(t)
	for _, rm := range []string{"kernelsu", "adb-root"} {
		t.Run(rm, func(t *testing.T) {
			t.Parallel()
			td := startDevice(t, &virtual.Options{RootMethod: rm})
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			opts := &Options{Apps: []string{"mcptest"}}
			res, err := Provision(ctx, td.dev, arts, opts)
			if err != nil {
				t.Fatalf("provision: %v\n%+v", err, res.Steps)
			}
			if string(res.Root) != rm {
				t.Errorf("root %s", res.Root)
			}
			rt, _ := res.Step("runtime")
			wantStart := map[string]string{"kernelsu": "rebooted", "adb-root": "started service.sh"}[rm]
			if !strings.Contains(rt.Detail, wantStart) {
				t.Errorf("runtime step %q, want %q", rt.Detail, wantStart)
			}
			if pl, _ := res.Step("plugins"); pl.Detail != "enabled mcptest" {
				t.Errorf("plugins step %q", pl.Detail)
			}
			// After a reboot the runtime comes back by itself with a
			// module manager; on adb-root provisioning starts it again.
			if err := td.dev.Reboot(ctx); err != nil {
				t.Fatal(err)
			}
			if err := td.dev.WaitBoot(ctx); err != nil {
				t.Fatal(err)
			}
			again, err := Provision(ctx, td.dev, arts, opts)
			if err != nil {
				t.Fatalf("provision after reboot: %v\n%+v", err, again.Steps)
			}
			for _, s := range again.Steps {
				if s.Changed && s.Name != "runtime" {
					t.Errorf("after reboot, %s changed: %s", s.Name, s.Detail)
				}
			}
			rt, _ = again.Step("runtime")
			if rm == "adb-root" && !strings.Contains(rt.Detail, "started") {
				t.Errorf("adb-root after reboot: runtime step %q", rt.Detail)
			}
		})
	}
}

// TestNoRoot: a device without root is refused at the probe.
func TestNoRoot(t *testing.T) {
	testenv.NeedVirtualDevices(t)
	arts := artifacts(t)
	td := startDevice(t, &virtual.Options{RootMethod: "none"})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := Provision(ctx, td.dev, arts, nil)
	if !errors.Is(err, devices.ErrNoRoot) || len(res.Steps) != 1 || res.Steps[0].Err == "" {
		t.Errorf("provision without root: %v %+v", err, res.Steps)
	}
}
