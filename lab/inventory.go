package lab

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/agentoslab/agentlab/devices"
	"github.com/agentoslab/agentlab/devices/adb"
	"github.com/agentoslab/agentlab/devices/adbserver"
	"github.com/agentoslab/agentlab/devices/pool"
	"github.com/agentoslab/agentlab/devices/virtual"
	"github.com/agentoslab/agentlab/lab/config"
	"github.com/agentoslab/agentlab/lab/modelstub"
	"github.com/agentoslab/agentlab/lab/testsite"
	"github.com/agentoslab/agentlab/reports"
)

// Device is one device a configuration names: what the inventory found
// and, in a run, everything the pipeline learns about it on the way from
// the probe to the report. It is the run's one per-device state.
type Device struct {
	// Source is where it comes from: "adb:HOST:PORT", "virtual", "avd" or
	// "container".
	Source string `json:"source"`
	Serial string `json:"serial,omitempty"`
	// Name is the virtual device's or AVD's name, or the container image.
	Name string `json:"name,omitempty"`
	// State is the adb state (device, offline, unauthorized …), running or
	// stopped for a virtual device, or what stands in the way
	// ("unreachable: …", "include [R5C*] admits none of: …", "not created
	// (agentlab run starts it)").
	State string `json:"state"`

	dev devices.Device // nil when nothing answers at Serial

	// What the run learns, in pipeline order (owned by Run's goroutine,
	// except that provision writes each device's fields from its own).
	info   devices.Info
	token  string          // the model-stub token its runtime was given
	record *reports.Device // the report's record, from the probe on
	ready  bool            // provisioned
	// published: a virtual device whose netd answers labHosts, so its
	// runtime reaches the stub by name.
	published bool
}

// labHosts are the names the lab publishes in its virtual devices' netd:
// the model stub, so that the runtime reaches it by name through the
// device's DNS, as it reaches a live provider.
var labHosts = map[string][]netip.Addr{
	modelstub.DeviceHost: {netip.MustParseAddr("127.0.0.1")},
	testsite.DeviceHost:  {netip.MustParseAddr("127.0.0.1")},
}

// virtual reports whether d is one of the lab's virtual devices (which
// run the runtime built with the lab's clock).
func (d *Device) virtual() bool {
	return d.Source == "virtual" || (d.record != nil && d.record.Kind == reports.DeviceVirtual)
}

// Handle is the device's handle, nil when it cannot be used.
func (d *Device) Handle() devices.Device { return d.dev }

// Usable reports whether the device answers adb and can be provisioned.
func (d *Device) Usable() bool {
	return d.dev != nil && (d.State == "device" || d.State == "running")
}

// Inventory is every device a configuration names, found once for all
// the commands (run, provision, devices): the devices of each adb server
// the include/exclude patterns admit, the virtual devices, the emulators.
// Running virtual devices are reached through a private adb server the
// Inventory owns; Close stops it, and the virtual devices this Inventory
// started unless they are kept.
type Inventory struct {
	Devices []*Device

	sources []pool.Source       // for the run's pool, as admitted
	servers []*adbserver.Server // private adb servers
	vdevs   []*virtual.Device   // virtual devices started here
	// leases are this run's holds on its virtual devices: another live
	// run neither adopts nor restarts them.
	leases []*virtual.Lease
	keep   bool
	closed bool
}

// inventoryOptions say how OpenInventory treats virtual devices.
type inventoryOptions struct {
	// start starts the virtual devices lab.yaml asks for that are not
	// running (a run); otherwise only running ones are adopted.
	start bool
	// keep starts them detached, to outlive the run.
	keep     bool
	progress io.Writer
	logger   *slog.Logger
}

// OpenInventory lists the devices cfg names, adopting running virtual
// devices (it starts none). Close the Inventory when done.
func OpenInventory(ctx context.Context, cfg *config.Config, opts *Options) (*Inventory, error) {
	o := opts.orDefault()
	return openInventory(ctx, cfg, &inventoryOptions{progress: o.Progress, logger: o.Logger})
}

func openInventory(ctx context.Context, cfg *config.Config, o *inventoryOptions) (*Inventory, error) {
	inv := &Inventory{keep: o.keep}
	for _, src := range cfg.Devices.ADB {
		inv.addADB(ctx, src, o.logger)
	}
	if v := cfg.Devices.Virtual; v != nil && v.Count > 0 {
		if err := inv.addVirtual(ctx, cfg, v, o); err != nil {
			inv.Close()
			return nil, err
		}
	}
	for _, e := range cfg.Devices.Emulators {
		switch {
		case e.AVD != nil:
			inv.Devices = append(inv.Devices, &Device{Source: "avd", Name: e.AVD.Name,
				State: fmt.Sprintf("configured ×%d (agentlab does not start emulators yet: start it and name its adb server)", max(e.AVD.Count, 1))})
		case e.Container != nil:
			inv.Devices = append(inv.Devices, &Device{Source: "container", Name: e.Container.Image,
				State: fmt.Sprintf("configured ×%d (agentlab does not start emulators yet: start it and name its adb server)", max(e.Container.Count, 1))})
		}
	}
	return inv, nil
}

// addADB lists one adb server's devices. When its patterns admit none of
// the devices it has, the one row says which it has, so a wrong include
// is plain to see.
func (inv *Inventory) addADB(ctx context.Context, src config.ADBServer, logger *slog.Logger) {
	srv := adb.NewServer(src.Server, &adb.Options{Logger: logger})
	inv.sources = append(inv.sources, admitted{Source: pool.ADB(srv), cfg: src})
	entries, err := srv.Devices(ctx)
	if err != nil {
		inv.Devices = append(inv.Devices, &Device{Source: srv.Name(), State: "unreachable: " + oneLine(err.Error())})
		return
	}
	var has []string
	admittedAny := false
	for _, e := range entries {
		has = append(has, e.Serial+" ("+e.State+")")
		if !src.Admits(e.Serial) {
			continue
		}
		admittedAny = true
		inv.Devices = append(inv.Devices, &Device{Source: srv.Name(), Serial: e.Serial, State: e.State, dev: srv.Device(e.Serial)})
	}
	switch {
	case admittedAny:
	case len(entries) == 0:
		inv.Devices = append(inv.Devices, &Device{Source: srv.Name(), State: "no devices attached"})
	default:
		inv.Devices = append(inv.Devices, &Device{Source: srv.Name(), State: admitsNone(src) + strings.Join(has, ", ")})
	}
}

// admitsNone says which patterns admitted nothing: "include [R5C*] admits
// none of: ".
func admitsNone(src config.ADBServer) string {
	var parts []string
	if len(src.Include) > 0 {
		parts = append(parts, "include ["+strings.Join(src.Include, ", ")+"]")
	}
	if len(src.Exclude) > 0 {
		parts = append(parts, "exclude ["+strings.Join(src.Exclude, ", ")+"]")
	}
	return strings.Join(parts, " and ") + " admits none of: "
}

// admitted is an adb source limited to the serials lab.yaml admits.
type admitted struct {
	pool.Source
	cfg config.ADBServer
}

func (s admitted) Devices(ctx context.Context) ([]pool.Found, error) {
	found, err := s.Source.Devices(ctx)
	var out []pool.Found
	for _, f := range found {
		if s.cfg.Admits(f.Serial) {
			out = append(out, f)
		}
	}
	return out, err
}

// addVirtual adds the virtual devices vdev-1 … vdev-N: running ones are
// adopted, the others started (o.start) or listed as not running. Those
// that run are connected to a private adb server.
func (inv *Inventory) addVirtual(ctx context.Context, cfg *config.Config, v *config.Virtual, o *inventoryOptions) error {
	dir := cfg.VirtualStateDir()
	onDisk := map[string]virtual.Info{}
	if infos, err := virtual.List(dir); err == nil {
		for _, in := range infos {
			onDisk[in.Name] = in
		}
	} else if !o.start {
		return fmt.Errorf("virtual devices in %s: %w", dir, err)
	}
	names := make([]string, v.Count)
	for i := range names {
		names[i] = "vdev-" + strconv.Itoa(i+1)
	}
	if !o.start {
		// Also show devices of this state folder beyond the count.
		for name := range onDisk {
			if !contains(names, name) {
				names = append(names, name)
			}
		}
		sort.Slice(names[v.Count:], func(i, j int) bool { return names[v.Count+i] < names[v.Count+j] })
	}
	devs := make([]*Device, len(names))
	var wg sync.WaitGroup
	var mu sync.Mutex
	for i, name := range names {
		in, known := onDisk[name]
		d := &Device{Source: "virtual", Name: name, Serial: in.Serial, State: in.State}
		devs[i] = d
		if o.start {
			// A run uses only the devices it leases: another live run's
			// device would get this run's provisioning and scenarios.
			l, err := virtual.TakeLease(dir, name)
			if err != nil {
				d.State = "unavailable: " + oneLine(err.Error())
				continue
			}
			inv.leases = append(inv.leases, l)
		}
		switch {
		case known && in.State == "running":
			if o.start {
				// A kept device: its netd's table gets the lab's names now;
				// an older device that cannot is given the stub's address.
				if err := virtual.SetHosts(dir, name, labHosts); err != nil {
					o.logger.Info("virtual device: lab names not published", "device", name, "err", err)
				} else {
					d.published = true
				}
			}
		case !o.start && known:
		case !o.start:
			d.State = "not created (agentlab run starts it)"
		default:
			wg.Go(func() {
				vo := &virtual.Options{Name: name, StateDir: dir, SDK: v.SDK, RootMethod: v.RootMethod, Logger: o.logger,
					TimeZone: v.TimeZone, Hosts: labHosts}
				d.published = true
				if o.keep {
					info, err := virtual.StartDetached(ctx, vo)
					if err != nil {
						d.State = "failed to start: " + oneLine(err.Error())
						return
					}
					d.Serial, d.State = info.Serial, "running"
					return
				}
				vd, err := virtual.Start(ctx, vo)
				if err != nil {
					d.State = "failed to start: " + oneLine(err.Error())
					return
				}
				mu.Lock()
				inv.vdevs = append(inv.vdevs, vd)
				mu.Unlock()
				d.Serial, d.State = vd.Serial(), "running"
			})
		}
	}
	wg.Wait()
	var srv *adb.Server
	for _, d := range devs {
		if d.State != "running" {
			continue
		}
		if srv == nil {
			s, err := adbserver.Start(ctx, &adbserver.Options{Logger: o.logger})
			if err != nil {
				return fmt.Errorf("adb server for the virtual devices: %w", err)
			}
			inv.servers = append(inv.servers, s)
			srv = adb.NewServer(s.Addr(), &adb.Options{Logger: o.logger})
			inv.sources = append(inv.sources, pool.ADB(srv))
		}
		if err := srv.Connect(ctx, d.Serial); err != nil {
			d.State = "running (adb connect failed: " + oneLine(err.Error()) + ")"
			continue
		}
		d.dev = srv.Device(d.Serial)
	}
	inv.Devices = append(inv.Devices, devs...)
	return nil
}

// Usable are the devices that answer adb, in inventory order.
func (inv *Inventory) Usable() []*Device {
	var out []*Device
	for _, d := range inv.Devices {
		if d.Usable() {
			out = append(out, d)
		}
	}
	return out
}

// problems lists the devices that cannot be used, and why, for the error
// that says no device answered.
func (inv *Inventory) problems() []string {
	var out []string
	for _, d := range inv.Devices {
		if d.Usable() {
			continue
		}
		id := d.Serial
		if id == "" {
			id = d.Name
		}
		line := d.Source
		if id != "" {
			line += " " + id
		}
		out = append(out, line+": "+d.State)
	}
	return out
}

// Close stops the virtual devices this Inventory started (unless kept)
// and its private adb servers. Kept virtual devices live on in their
// keeper; the next run (or agentlab vdevice) finds them again.
func (inv *Inventory) Close() error {
	if inv == nil || inv.closed {
		return nil
	}
	inv.closed = true
	ctx, cancel := context.WithTimeout(context.Background(), stopTimeout)
	defer cancel()
	var wg sync.WaitGroup
	for _, d := range inv.vdevs {
		wg.Go(func() { d.Stop(ctx) })
	}
	wg.Wait()
	var errs []error
	for _, s := range inv.servers {
		errs = append(errs, s.Close())
	}
	// Released after the devices stopped, so no other run starts one
	// while this run is still stopping it.
	for _, l := range inv.leases {
		errs = append(errs, l.Release())
	}
	return errors.Join(errs...)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// oneLine folds an error's lines into one, for a table cell.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
