package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"

	"github.com/agentoslab/agentlab/devices"
	"github.com/agentoslab/agentlab/devices/adb"
	"github.com/agentoslab/agentlab/devices/adbserver"
	"github.com/agentoslab/agentlab/devices/virtual"
	"github.com/agentoslab/agentlab/lab/config"
)

// invDevice is one device the configuration names.
type invDevice struct {
	// Source is "adb:HOST:PORT", "virtual" or "avd:NAME"/"container:IMAGE".
	Source string `json:"source"`
	Serial string `json:"serial,omitempty"`
	// Name is the virtual device's or AVD's name.
	Name string `json:"name,omitempty"`
	// State is the adb state, or running/stopped/not created for
	// devices the lab starts itself.
	State string `json:"state"`

	dev devices.Device
}

// inventory lists what lab.yaml names. Running virtual devices are
// adopted by a private adb server owned by the returned closer.
func inventory(ctx context.Context, cfg *config.Config, log io.Writer) ([]invDevice, io.Closer, error) {
	var out []invDevice
	var closers closeAll
	for _, src := range cfg.Devices.ADB {
		s := adb.NewServer(src.Server, nil)
		entries, err := s.Devices(ctx)
		if err != nil {
			fmt.Fprintf(log, "adb server %s: %v\n", src.Server, err)
			out = append(out, invDevice{Source: s.Name(), State: "unreachable"})
			continue
		}
		for _, e := range entries {
			if !src.Admits(e.Serial) {
				continue
			}
			out = append(out, invDevice{Source: s.Name(), Serial: e.Serial, State: e.State, dev: s.Device(e.Serial)})
		}
	}
	if v := cfg.Devices.Virtual; v != nil && v.Count > 0 {
		infos, err := virtual.List(cfg.VirtualStateDir())
		if err != nil {
			return nil, &closers, err
		}
		sort.Slice(infos, func(i, j int) bool { return infos[i].Name < infos[j].Name })
		var srv *adb.Server
		for _, in := range infos {
			d := invDevice{Source: "virtual", Name: in.Name, Serial: in.Serial, State: in.State}
			if in.State == "running" {
				if srv == nil {
					s, err := adbserver.Start(ctx, nil)
					if err != nil {
						return nil, &closers, fmt.Errorf("adb server for virtual devices: %w", err)
					}
					closers = append(closers, s)
					srv = adb.NewServer(s.Addr(), nil)
				}
				if err := srv.Connect(ctx, in.Serial); err == nil {
					d.dev = srv.Device(in.Serial)
				} else {
					d.State = "running (adb connect failed)"
				}
			}
			out = append(out, d)
		}
		for n := len(infos); n < v.Count; n++ {
			out = append(out, invDevice{Source: "virtual", Name: "vdev-" + strconv.Itoa(n+1), State: "not created (agentlab run starts it)"})
		}
	}
	for _, e := range cfg.Devices.Emulators {
		switch {
		case e.AVD != nil:
			out = append(out, invDevice{Source: "avd", Name: e.AVD.Name, State: fmt.Sprintf("configured ×%d (agentlab run starts it)", e.AVD.Count)})
		case e.Container != nil:
			out = append(out, invDevice{Source: "container", Name: e.Container.Image, State: fmt.Sprintf("configured ×%d (agentlab run starts it)", e.Container.Count)})
		}
	}
	return out, &closers, nil
}

// closeAll closes every closer it holds.
type closeAll []io.Closer

func (c *closeAll) Close() error {
	var errs []error
	for _, x := range *c {
		errs = append(errs, x.Close())
	}
	*c = nil
	return errors.Join(errs...)
}
