package bridge

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agentoslab/agentlab/devices"
	"github.com/agentoslab/agentlab/devices/adb"
	"github.com/agentoslab/agentlab/lab/runtimectl"
	"github.com/agentoslab/agentlab/runtime/errcode"
)

// Reasons of Code's failures (Error.Reason).
const (
	ReasonNoRoot            = "no_root"
	ReasonSuDenied          = "su_denied"
	ReasonNotInstalled      = "not_installed"
	ReasonRuntimeNotRunning = "runtime_not_running"
)

// CodeOptions are Code's own options.
type CodeOptions struct {
	// Enable turns desktop access on first (desktop enable, which also
	// gives a code) instead of failing when it is off.
	Enable bool
	// Pair pairs with the code at once and stores the token; the code is
	// then not printed.
	Pair bool
}

// Code takes a fresh pairing code from the device over adb, as root: the
// module's `agentosd ctl desktop code` through su (Magisk, KernelSU) or a
// root adbd (adb root, userdebug builds). The code goes to stdout alone
// (one line, for the person or script that asked) unless co.Pair pairs
// with it; it is never logged. The old code, if any, stops working.
//
// A failure says exactly why: adb has no such device, the device has no
// root or su denied the shell, the module is not installed, the runtime
// is not running, desktop access is off (and how to turn it on).
func Code(ctx context.Context, opts Options, co CodeOptions) error {
	o := opts
	o.normalize()
	if o.Connect != "" {
		return &Error{Code: ExitUsage, Msg: "code takes the code over adb, which --connect skips",
			Hint: "show a code on the phone (" + phoneCode + "), then: agentlab bridge pair --connect " + o.Connect + " <code>"}
	}
	t, err := o.resolve(ctx)
	if err != nil {
		return err
	}
	if !t.ready {
		if err := o.checkDevice(ctx, t.serial); err != nil {
			return err
		}
	}
	rc := runtimectl.New(adb.NewServer(o.adbServer(), nil).Device(t.serial), &runtimectl.Options{OneShot: true})
	var res *runtimectl.CodeResult
	if co.Enable {
		res, err = rc.DesktopEnable(ctx)
	} else {
		res, err = rc.DesktopCode(ctx)
	}
	if err != nil {
		return codeErr(ctx, t, err)
	}
	valid := time.Duration(res.ExpiresInMs) * time.Millisecond
	if co.Pair {
		o.info("took a new pairing code from %s (valid %s); pairing", t.serial, valid)
		s, cleanup, err := o.connect(ctx, res.Code, true)
		if err != nil {
			return err
		}
		s.conn.Close()
		cleanup()
		return nil
	}
	if _, err := fmt.Fprintln(o.Stdout, res.Code); err != nil {
		return fail(ExitFailure, err, "write to stdout")
	}
	o.info("a new pairing code for %s, valid %s, one use; pair with: %s", t.serial, valid, t.command("pair <code>"))
	return nil
}

// codeErr says why the code could not be taken.
func codeErr(ctx context.Context, t *target, err error) error {
	s := t.serial
	var ce *runtimectl.CtlError
	switch {
	case ctx.Err() != nil:
		return fail(ExitFailure, ctx.Err(), "interrupted")
	case errors.Is(err, devices.ErrNoRoot):
		return &Error{Code: ExitDevice, Reason: ReasonNoRoot, Err: err,
			Msg:  "no root on " + s + ": the pairing code comes from the AgentOS module's agentosd, which runs as root",
			Hint: "root the phone (Magisk or KernelSU; on a userdebug emulator adb root is used), or read the code on the phone: Settings → Desktop access"}
	case errors.As(err, &ce) && strings.Contains(strings.ToLower(ce.Stderr), "denied"):
		// su's own refusal is only text ("Permission denied"), exit 1.
		return &Error{Code: ExitDevice, Reason: ReasonSuDenied, Err: err,
			Msg:  "su on " + s + " denied the shell",
			Hint: "allow the Shell (com.android.shell) in Magisk's or KernelSU's superuser list, then try again"}
	case errors.Is(err, runtimectl.ErrNotInstalled):
		return &Error{Code: ExitDevice, Reason: ReasonNotInstalled, Err: err,
			Msg:  "the AgentOS module is not installed on " + s,
			Hint: "install it: agentlab provision (or flash the module zip with Magisk or KernelSU and reboot)"}
	case errors.Is(err, runtimectl.ErrUnreachable):
		return &Error{Code: ExitNotListening, Reason: ReasonRuntimeNotRunning, Err: err,
			Msg:  "the AgentOS runtime is not running on " + s,
			Hint: "reboot the phone, or start it: adb -s " + s + ` shell "su -c 'sh /data/adb/modules/agentos/service.sh'"; agentlab devices shows its status`}
	case errors.Is(err, errcode.InvalidState):
		return &Error{Code: ExitNotListening, Reason: ReasonDisabled, Err: err,
			Msg:  "desktop access is off on " + s,
			Hint: "turn it on on the phone (Settings → Desktop access), or from here: agentlab bridge code -s " + s + " --enable --pair"}
	case errors.Is(err, devices.ErrDeviceGone):
		return &Error{Code: ExitDevice, Reason: ReasonNoDevice, Err: err, Msg: "device " + s + " went away",
			Hint: "check it with: adb devices"}
	}
	var ee *errcode.Error
	if errors.As(err, &ee) {
		return &Error{Code: ExitFailure, Err: err, Msg: "the runtime on " + s + " refused"}
	}
	return &Error{Code: ExitDevice, Err: err, Msg: "taking a pairing code from " + s + " failed",
		Hint: "check the device with: adb -s " + s + " shell id"}
}

// adbServer is the adb server the adb command line uses: ADB_SERVER_SOCKET
// (tcp:…), else ANDROID_ADB_SERVER_PORT, else 127.0.0.1:5037.
func (o *Options) adbServer() string {
	get := o.Getenv
	if o.ADBEnv != nil {
		get = func(k string) string {
			v := ""
			for _, kv := range o.ADBEnv {
				if val, ok := strings.CutPrefix(kv, k+"="); ok {
					v = val
				}
			}
			return v
		}
	}
	if s, ok := strings.CutPrefix(get("ADB_SERVER_SOCKET"), "tcp:"); ok && s != "" {
		return s
	}
	if p := get("ANDROID_ADB_SERVER_PORT"); p != "" {
		return "127.0.0.1:" + p
	}
	return "127.0.0.1:5037"
}
