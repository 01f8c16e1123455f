// Command vdcontainer is the entry point of the virtual-device container
// image: it boots one virtual device in the foreground, with its adb port
// on 127.0.0.1:PORT (with host networking, the host's loopback, where an
// adb server adopts it with adb connect), and stops it on SIGTERM.
//
// The image is FROM scratch: this binary built with CGO_ENABLED=0, and a
// static busybox as /bin. Namespaces need CAP_SYS_ADMIN and CAP_NET_ADMIN.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/agentoslab/agentlab/devices/virtual"
)

func main() {
	// The same binary is the device's init and its in-device tools.
	virtual.Init()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "vdcontainer:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("vdcontainer", flag.ContinueOnError)
	var o virtual.Options
	fs.IntVar(&o.Port, "port", 15555, "adb port on 127.0.0.1 (outside 5555-5585)")
	fs.StringVar(&o.Name, "name", "vdev", "device name, [a-z0-9-]{1,32}")
	fs.StringVar(&o.RootMethod, "root-method", virtual.RootMagisk, "magisk, kernelsu, adb-root or none")
	fs.IntVar(&o.SDK, "sdk", 35, "API level")
	fs.StringVar(&o.StateDir, "state-dir", "/var/lib/vdevice", "parent folder of the device's persistent root")
	if err := fs.Parse(args); err != nil {
		return err
	}
	o.Logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	sctx, cancel := context.WithTimeout(ctx, time.Minute)
	d, err := virtual.Start(sctx, &o)
	cancel()
	if err != nil {
		return err
	}
	fmt.Println("vdcontainer: ready at", d.Serial())
	select {
	case <-ctx.Done():
	case <-d.Done():
		return fmt.Errorf("device %s went down", d.Name())
	}
	stopCtx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return d.Stop(stopCtx)
}
