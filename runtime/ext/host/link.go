package host

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"sync"
	"time"

	"github.com/agentoslab/agentlab/runtime/apps"
	"github.com/agentoslab/agentlab/runtime/apps/launcher"
	"github.com/agentoslab/agentlab/runtime/clock/labclock"
	"github.com/agentoslab/agentlab/runtime/errcode"
	"github.com/agentoslab/agentlab/runtime/ext/internal/wire"
	"github.com/agentoslab/agentlab/runtime/internal/rpc"
	"github.com/agentoslab/agentlab/runtime/transport"
)

// linkDialTimeout bounds how long the host looks for serve's socket.
const linkDialTimeout = 10 * time.Second

// handle answers serve's requests.
func (h *Host) handle(ctx context.Context, method string, params json.RawMessage) (any, error) {
	switch method {
	case wire.MethodCall:
		var p wire.CallParams
		if err := json.Unmarshal(params, &p); err != nil {
			return nil, errcode.New(errcode.InvalidParams, "bad call")
		}
		return h.Call(ctx, p), nil
	case wire.MethodSkill:
		var p wire.SkillParams
		if err := json.Unmarshal(params, &p); err != nil {
			return nil, errcode.New(errcode.InvalidParams, "bad skill request")
		}
		return h.ReadSkill(p)
	case wire.MethodAlways:
		var p wire.AlwaysParams
		if err := json.Unmarshal(params, &p); err != nil {
			return nil, errcode.New(errcode.InvalidParams, "bad always request")
		}
		return struct{}{}, h.SetAlways(p.Source)
	case wire.MethodAdmin:
		var p wire.AdminParams
		if err := json.Unmarshal(params, &p); err != nil {
			return nil, errcode.New(errcode.InvalidParams, "bad admin request")
		}
		return h.Admin(ctx, p.Op, p.Params)
	}
	return nil, errcode.Newf(errcode.Unsupported, "unknown method %q", clip(method, 64))
}

// dialLink connects to serve's private socket and checks that serve runs
// as this process's uid.
func dialLink(ctx context.Context, name string) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, linkDialTimeout)
	defer cancel()
	for {
		c, err := transport.Dial(ctx, name)
		if err == nil {
			cred, err := transport.PeerCred(c)
			if err != nil {
				c.Close()
				return nil, err
			}
			if cred.UID != os.Getuid() {
				c.Close()
				return nil, fmt.Errorf("ext host: %s is served by uid %d, not the runtime's uid %d", name, cred.UID, os.Getuid())
			}
			return c, nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("ext host: serve's socket %s: %w", name, err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// ServeLink connects to serve on name, introduces itself, pushes the
// catalog whenever it changes and answers serve's requests, until the
// link or ctx ends.
func (h *Host) ServeLink(ctx context.Context, name string) error {
	c, err := dialLink(ctx, name)
	if err != nil {
		return err
	}
	lp := &linkPush{h: h}
	handle := func(ctx context.Context, method string, params json.RawMessage) (any, error) {
		res, err := h.handle(ctx, method, params)
		if method == wire.MethodAdmin && err == nil {
			// Read your writes: the catalog an owner operation changed
			// reaches serve before the operation's answer does (one
			// connection, in order), so `plugins approval` followed by
			// `catalog` shows the change on any device, however fast.
			if perr := lp.push(); perr != nil {
				return nil, errcode.Wrap(errcode.Internal, "catalog not pushed", perr)
			}
		}
		return res, err
	}
	peer := rpc.New(c, &rpc.Options{Handler: handle, MaxLineChars: wire.MaxLineChars, Logger: h.o.Logger})
	lp.peer = peer
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	runErr := make(chan error, 1)
	go func() { runErr <- peer.Run(ctx) }()
	if err := peer.Notify(wire.NotifyHello, wire.Hello{PID: os.Getpid()}); err != nil {
		cancel()
		<-runErr
		return err
	}
	if err := lp.push(); err != nil {
		cancel()
		<-runErr
		return err
	}
	for {
		select {
		case err := <-runErr:
			return err
		case <-h.notify:
			if err := lp.push(); err != nil {
				h.o.Logger.Warn("ext host: catalog not pushed", "err", err)
				cancel()
				return <-runErr
			}
		}
	}
}

// linkPush sends serve the latest catalog once per version, from the
// link's loop and after every owner operation.
type linkPush struct {
	h    *Host
	peer *rpc.Peer

	mu      sync.Mutex // one push at a time, so versions arrive in order
	started bool
	sent    uint64
}

func (lp *linkPush) push() error {
	lp.mu.Lock()
	defer lp.mu.Unlock()
	lp.h.mu.Lock()
	cat := lp.h.latest
	lp.h.mu.Unlock()
	if lp.started && cat.Version == lp.sent {
		return nil
	}
	if err := lp.peer.Notify(wire.NotifyCatalog, cat); err != nil {
		return err
	}
	lp.started, lp.sent = true, cat.Version
	return nil
}

// WatchTable rescans whenever the package table changes, until ctx ends.
func (h *Host) WatchTable(ctx context.Context) {
	for {
		ch := h.o.Table.Changed()
		select {
		case <-ctx.Done():
			return
		case <-ch:
			h.Rescan()
		}
	}
}

// launcherAdapter makes the supervisor's launcher client a Launcher.
type launcherAdapter struct{ c *launcher.Client }

func (l launcherAdapter) Start(ctx context.Context, pkg, server string) error {
	_, err := l.c.Start(ctx, pkg, server)
	return err
}

func (l launcherAdapter) Stop(ctx context.Context, pkg, server string) error {
	_, err := l.c.Stop(ctx, pkg, server)
	return err
}

// LauncherClient adapts a launcher client (the supervisor's) to Launcher.
func LauncherClient(c *launcher.Client) Launcher { return launcherAdapter{c} }

// Main is `agentosd ext`: the extension host process that `serve`
// starts and watches. It returns the exit code.
//
//	agentosd ext --data DIR --apps DIR [--socket-prefix P] [--socket-dir D]
//	             [--link NAME] [--launcher SOCKET|none]
//	             [--call-timeout D] [--idle-timeout D] [--connect-timeout D] [--log-level L]
func Main(ctx context.Context, args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("ext", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dataDir := fs.String("data", "", "the runtime's data directory (required)")
	appsDir := fs.String("apps", "", "the package table's directory (required)")
	prefix := fs.String("socket-prefix", "", "socket-name prefix of the runtime")
	sockDir := fs.String("socket-dir", "", "directory of socket files")
	link := fs.String("link", "", "serve's private socket (default the Ext name)")
	launch := fs.String("launcher", "", `the launcher's socket ("none": services are started by someone else)`)
	callTimeout := fs.Duration("call-timeout", 0, "tool call timeout (default 120s)")
	idleTimeout := fs.Duration("idle-timeout", 0, "close idle provider connections after (default 30s)")
	connectTimeout := fs.Duration("connect-timeout", 0, "bound of start+connect+initialize+list (default 15s)")
	logLevel := fs.String("log-level", "info", "debug, info, warn or error")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *dataDir == "" || *appsDir == "" || fs.NArg() > 0 {
		fmt.Fprintln(stderr, "agentosd ext: --data and --apps are required")
		return 2
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		fmt.Fprintln(stderr, "agentosd ext: bad --log-level")
		return 2
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level})).With("proc", "ext")
	names := transport.Names{Prefix: *prefix, Dir: *sockDir}
	if *link == "" {
		*link = names.Ext()
	}
	var l Launcher
	switch *launch {
	case "none":
	case "":
		l = LauncherClient(launcher.NewClient(launcher.SocketName(names)))
	default:
		l = LauncherClient(launcher.NewClient(*launch))
	}
	table, err := apps.OpenTable(*appsDir, &apps.TableOptions{Logger: logger})
	if err != nil {
		logger.Error("package table unreadable", "err", err)
		return 1
	}
	defer table.Close()
	// The lab's build follows serve's virtual clock; a release build
	// gets the real one.
	clk := labclock.Follow(*dataDir, logger)
	defer clk.Close()
	h, err := New(Options{
		DataDir: *dataDir, Table: table, Names: names, Launcher: l,
		CallTimeout: *callTimeout, IdleTimeout: *idleTimeout, ConnectTimeout: *connectTimeout,
		Clock: clk.Clock(), Logger: logger,
	})
	if err != nil {
		logger.Error("cannot start", "err", err)
		return 1
	}
	defer h.Close()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); h.WatchTable(ctx) }()
	err = h.ServeLink(ctx, *link)
	stopped := ctx.Err() != nil
	cancel()
	wg.Wait()
	if err != nil && !errors.Is(err, context.Canceled) && !stopped {
		logger.Error("link ended", "err", err)
		return 1
	}
	logger.Info("stopped")
	return 0
}
