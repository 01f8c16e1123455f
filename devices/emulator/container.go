package emulator

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/testcontainers/testcontainers-go"

	"github.com/agentoslab/agentlab/devices/adb"
)

// Labels the container provider puts on every container it starts.
const (
	// LabelRun carries the lab run's id; Reap removes a run's containers.
	LabelRun = "org.agentoslab.run"
	// LabelOwner is "HOST/PID/START" of the process that started the
	// container; ReapOrphans removes containers whose owner is gone.
	LabelOwner = "org.agentoslab.owner"
	// LabelDevice is the device name given to Start.
	LabelDevice = "org.agentoslab.device"
)

// ErrContainerExited: the container stopped before its device came up.
var ErrContainerExited = errors.New("container exited")

// Build describes an image built from a local context instead of pulled.
type Build struct {
	// Context is the build context directory; Dockerfile is relative to
	// it (default "Dockerfile").
	Context    string
	Dockerfile string
	// Repo and Tag name the image (default: generated).
	Repo, Tag string
	// KeepImage keeps the image when the container is terminated.
	KeepImage bool
}

// ContainerOptions configure a ContainerProvider. Image or Build is
// required; the rest has working defaults.
//
// testcontainers-go's own reaper (Ryuk) pulls an image from Docker Hub;
// where that is impossible set TESTCONTAINERS_RYUK_DISABLED=true in the
// process environment: the run labels and Reap/ReapOrphans take its place.
type ContainerOptions struct {
	Image string
	Build *Build
	Cmd   []string
	Env   map[string]string
	// RunID labels every container (LabelRun). Default: NewRunID().
	RunID string
	// ADBPort is where adbd listens inside the container. Default 5555.
	ADBPort int
	// HostNetwork shares the host's network namespace: the device's adb
	// port is on the host's loopback and nothing is published (the
	// virtual device image). Otherwise ADBPort is published on a random
	// host port.
	HostNetwork bool
	// KVM maps /dev/kvm into the container (emulator images need it).
	KVM bool
	// Privileged, CapAdd and SecurityOpt go to the container's host
	// config. A virtual device needs CAP_SYS_ADMIN for its namespaces.
	Privileged  bool
	CapAdd      []string
	SecurityOpt []string
	// Server is the adb server that adopts the device with adb connect.
	// Nil means 127.0.0.1:5037.
	Server *adb.Server
	// StartTimeout bounds Start from container creation to boot completed.
	// Default 5 min.
	StartTimeout time.Duration
	// Logger; nil discards. testcontainers' own lines go to it at debug.
	Logger *slog.Logger
}

// ContainerProvider starts devices in containers.
type ContainerProvider struct {
	opts   ContainerOptions
	server *adb.Server
	log    *slog.Logger
}

// NewRunID returns a fresh run id: UTC time and 6 random bytes.
func NewRunID() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return time.Now().UTC().Format("20060102T150405") + "-" + hex.EncodeToString(b[:])
}

// NewContainerProvider validates the options.
func NewContainerProvider(opts *ContainerOptions) (*ContainerProvider, error) {
	var o ContainerOptions
	if opts != nil {
		o = *opts
	}
	if (o.Image == "") == (o.Build == nil) {
		return nil, errors.New("container provider: set exactly one of Image and Build")
	}
	if o.RunID == "" {
		o.RunID = NewRunID()
	}
	if o.ADBPort == 0 {
		o.ADBPort = 5555
	}
	if o.ADBPort < 1 || o.ADBPort > 65535 {
		return nil, fmt.Errorf("container provider: adb port %d out of range", o.ADBPort)
	}
	if o.StartTimeout <= 0 {
		o.StartTimeout = 5 * time.Minute
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	srv := o.Server
	if srv == nil {
		srv = adb.NewServer("127.0.0.1:5037", &adb.Options{Logger: log})
	}
	return &ContainerProvider{opts: o, server: srv, log: log}, nil
}

// RunID is the run id on this provider's containers.
func (p *ContainerProvider) RunID() string { return p.opts.RunID }

// Container is a running device container.
type Container struct {
	// Name is the device name given to Start; ID the container's id.
	Name, ID string
	// Serial is the device's serial on the adb server ("HOST:PORT").
	Serial string
	Device *adb.Device

	p *ContainerProvider
	c testcontainers.Container
}

// tcLogger sends testcontainers' lines to slog at debug level.
type tcLogger struct{ log *slog.Logger }

func (l tcLogger) Printf(format string, v ...any) {
	l.log.Debug(strings.TrimSpace(fmt.Sprintf(format, v...)), "component", "testcontainers")
}

// owner identifies this process across pid reuse: host, pid and the
// process's start time in clock ticks since boot.
func owner() string {
	host, _ := os.Hostname()
	return host + "/" + strconv.Itoa(os.Getpid()) + "/" + procStart(os.Getpid())
}

func procStart(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	// Fields after the parenthesised command; starttime is field 22.
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 {
		f := strings.Fields(s[i+1:])
		if len(f) > 19 {
			return f[19]
		}
	}
	return ""
}

// Start creates and starts a container for the device name, waits until
// the adb server has adopted its device (adb connect) and it has booted.
// On failure the container is terminated.
func (p *ContainerProvider) Start(ctx context.Context, name string) (*Container, error) {
	o := p.opts
	ctx, cancel := context.WithTimeout(ctx, o.StartTimeout)
	defer cancel()
	port := strconv.Itoa(o.ADBPort) + "/tcp"
	req := testcontainers.ContainerRequest{
		Image: o.Image,
		Cmd:   o.Cmd,
		Env:   o.Env,
		Labels: map[string]string{
			LabelRun:    o.RunID,
			LabelOwner:  owner(),
			LabelDevice: name,
		},
		HostConfigModifier: func(hc *container.HostConfig) {
			hc.Privileged = o.Privileged
			hc.CapAdd = append(hc.CapAdd, o.CapAdd...)
			hc.SecurityOpt = append(hc.SecurityOpt, o.SecurityOpt...)
			if o.HostNetwork {
				hc.NetworkMode = "host"
			}
			if o.KVM {
				hc.Devices = append(hc.Devices, container.DeviceMapping{PathOnHost: "/dev/kvm", PathInContainer: "/dev/kvm", CgroupPermissions: "rwm"})
			}
		},
	}
	if o.Build != nil {
		req.FromDockerfile = testcontainers.FromDockerfile{
			Context: o.Build.Context, Dockerfile: o.Build.Dockerfile, Repo: o.Build.Repo, Tag: o.Build.Tag, KeepImage: o.Build.KeepImage,
		}
	}
	if !o.HostNetwork {
		req.ExposedPorts = []string{port}
	}
	tc, err := testcontainers.GenericContainer(ctx, testcontainers.GenericContainerRequest{
		ContainerRequest: req, Started: true, Logger: tcLogger{p.log},
	})
	if err != nil {
		if tc != nil {
			_ = tc.Terminate(context.WithoutCancel(ctx))
		}
		return nil, fmt.Errorf("start container %s: %w", name, err)
	}
	c := &Container{Name: name, ID: tc.GetContainerID(), p: p, c: tc}
	p.log.Info("container started", "device", name, "id", c.ID, "run", o.RunID)
	fail := func(err error) (*Container, error) {
		_ = c.Terminate(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("start container %s: %w", name, err)
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(o.ADBPort))
	if !o.HostNetwork {
		host, err := tc.Host(ctx)
		if err != nil {
			return fail(err)
		}
		mp, err := tc.MappedPort(ctx, port)
		if err != nil {
			return fail(err)
		}
		addr = net.JoinHostPort(host, mp.Port())
	}
	c.Serial = addr
	c.Device = p.server.Device(addr)
	if err := p.adopt(ctx, c); err != nil {
		return fail(err)
	}
	if err := c.Device.WaitBoot(ctx); err != nil {
		return fail(err)
	}
	return c, nil
}

// adopt connects the adb server to the container's device until it is
// "device", failing early if the container stops.
func (p *ContainerProvider) adopt(ctx context.Context, c *Container) error {
	wait := 100 * time.Millisecond
	var last error
	for {
		err := p.server.Connect(ctx, c.Serial)
		if err == nil {
			st, serr := c.Device.State(ctx)
			if serr == nil && st == "device" {
				return nil
			}
			err = serr
			if err == nil {
				err = fmt.Errorf("adb state %s", st)
			}
		}
		last = err
		if st, serr := c.c.State(ctx); serr == nil && st != nil && !st.Running {
			return fmt.Errorf("%w (exit %d): %s", ErrContainerExited, st.ExitCode, c.logTail(ctx))
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("adb connect %s: %w (last: %v)", c.Serial, ctx.Err(), last)
		case <-t.C:
		}
		wait = min(wait*2, 2*time.Second)
	}
}

// logTail returns the last few KiB of the container's output.
func (c *Container) logTail(ctx context.Context) string {
	rc, err := c.c.Logs(ctx)
	if err != nil {
		return ""
	}
	defer rc.Close()
	t := &tailBuffer{max: 4 << 10}
	_, _ = io.Copy(t, io.LimitReader(rc, 16<<20))
	return t.String()
}

// Terminate disconnects the device from the adb server and removes the
// container.
func (c *Container) Terminate(ctx context.Context) error {
	if c.Serial != "" {
		_ = c.p.server.Disconnect(ctx, c.Serial)
	}
	if err := c.c.Terminate(ctx); err != nil {
		return fmt.Errorf("terminate %s: %w", c.Name, err)
	}
	return nil
}
