package pool

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/agentoslab/agentlab/devices"
)

// verdict is the gate's classification of a failed check.
type verdict int

const (
	pass verdict = iota
	// fault: the device is broken (offline, no boot, shell silent, root
	// broken): recover it.
	fault
	// condition: the device is fine but not fit now (battery, storage):
	// re-check later.
	condition
	// mismatch: the device lacks what this Acquire asked for (root,
	// module): leave it available for others.
	mismatch
	// aborted: the caller gave up during the gate; not the device's fault.
	aborted
)

// problem is why a device failed the gate.
type problem struct {
	v      verdict
	check  string
	detail string
}

func (pr problem) String() string { return pr.check + ": " + pr.detail }

// classifier turns a failed check's error into a problem: the caller's
// context ending is not the device's fault; a probe timing out is.
func (p *Pool) classifier(ctx context.Context) func(string, error) problem {
	return func(check string, err error) problem {
		if ctx.Err() != nil {
			return problem{aborted, check, ctx.Err().Error()}
		}
		if errors.Is(err, context.DeadlineExceeded) {
			return problem{fault, check, fmt.Sprintf("no answer within %s", p.opts.Health.ShellTimeout)}
		}
		return problem{fault, check, err.Error()}
	}
}

// alive checks what makes a device usable at all: adb state "device",
// and a shell that answers within ShellTimeout that sys.boot_completed=1.
func (p *Pool) alive(ctx context.Context, d devices.Device) problem {
	classify := p.classifier(ctx)
	c, cancel := context.WithTimeout(ctx, p.opts.Health.ShellTimeout)
	st, err := d.State(c)
	cancel()
	if err != nil {
		return classify("state", err)
	}
	if st != "device" {
		return problem{fault, "state", "adb state " + st}
	}
	// One round trip answers "shell responsive" and "boot completed".
	c, cancel = context.WithTimeout(ctx, p.opts.Health.ShellTimeout)
	res, err := d.Shell(c, "getprop sys.boot_completed")
	cancel()
	if err != nil {
		return classify("shell", err)
	}
	if strings.TrimSpace(string(res.Stdout)) != "1" {
		return problem{fault, "boot", "sys.boot_completed is not 1"}
	}
	return problem{v: pass}
}

// gate runs the health checks of A.11 item 1 in order, each bounded by
// ShellTimeout: adb state, boot completed, shell answering, battery,
// storage, then root and module if the selector asks.
func (p *Pool) gate(ctx context.Context, d devices.Device, info devices.Info, sel Selector) problem {
	h := p.opts.Health
	if pr := p.alive(ctx, d); pr.v != pass {
		return pr
	}
	classify := p.classifier(ctx)
	step := func() (context.Context, context.CancelFunc) { return context.WithTimeout(ctx, h.ShellTimeout) }
	var c context.Context
	var cancel context.CancelFunc

	if h.MinBattery > 0 {
		c, cancel = step()
		b, err := d.Battery(c)
		cancel()
		if err != nil {
			return classify("battery", err)
		}
		if b.Present && b.Level < h.MinBattery {
			return problem{condition, "battery", fmt.Sprintf("level %d%% below %d%%", b.Level, h.MinBattery)}
		}
	}

	if h.MinFreeStorage > 0 {
		c, cancel = step()
		free, err := d.FreeStorage(c, h.StoragePath)
		cancel()
		if err != nil {
			return classify("storage", err)
		}
		if free < h.MinFreeStorage {
			return problem{condition, "storage", fmt.Sprintf("%d bytes free on %s, below %d", free, h.StoragePath, h.MinFreeStorage)}
		}
	}

	if sel.NeedRoot || sel.Module != "" {
		if info.Root == devices.RootNone || info.Root == "" {
			return problem{mismatch, "root", "device has no root method"}
		}
		c, cancel = step()
		res, err := d.Su(c, "id -u")
		cancel()
		if err != nil {
			return classify("root", err)
		}
		if res.ExitCode != 0 || strings.TrimSpace(string(res.Stdout)) != "0" {
			return problem{fault, "root", fmt.Sprintf("%s root does not work (exit %d)", info.Root, res.ExitCode)}
		}
	}

	if sel.Module != "" {
		dir := "/data/adb/modules/" + sel.Module
		c, cancel = step()
		res, err := d.Su(c, "test -f "+dir+"/module.prop && ! test -e "+dir+"/disable && ! test -e "+dir+"/remove && ! test -e "+dir+"/update")
		cancel()
		if err != nil {
			return classify("module", err)
		}
		if res.ExitCode != 0 {
			return problem{mismatch, "module", "module " + sel.Module + " is not installed and active"}
		}
	}
	return problem{v: pass}
}
