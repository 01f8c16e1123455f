package bridge

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/agentoslab/agentlab/devices"
	"github.com/agentoslab/agentlab/lab/runtimectl"
	"github.com/agentoslab/agentlab/runtime/errcode"
)

// TestCodeErr: each way taking a code fails maps to its exit code, reason
// and a hint naming the device (the real-device paths are in
// TestCodeFailures and the editor e2e test).
func TestCodeErr(t *testing.T) {
	tg := &target{key: "adb:emu-1", serial: "emu-1"}
	wrap := func(err error) error { return fmt.Errorf("agentosd ctl desktop code: %w", err) }
	cases := []struct {
		err    error
		exit   int
		reason string
		hint   string
	}{
		{wrap(devices.ErrNoRoot), ExitDevice, ReasonNoRoot, "Magisk or KernelSU"},
		{&runtimectl.CtlError{Verb: "desktop code", ExitCode: 1, Stderr: "Permission denied"}, ExitDevice, ReasonSuDenied, "superuser list"},
		{wrap(runtimectl.ErrNotInstalled), ExitDevice, ReasonNotInstalled, "agentlab provision"},
		{wrap(runtimectl.ErrUnreachable), ExitNotListening, ReasonRuntimeNotRunning, "adb -s emu-1 shell"},
		{wrap(errcode.New(errcode.InvalidState, "desktop access is turned off")), ExitNotListening, ReasonDisabled, "agentlab bridge code -s emu-1 --enable --pair"},
		{wrap(devices.ErrDeviceGone), ExitDevice, ReasonNoDevice, "adb devices"},
		{wrap(errcode.New(errcode.SafeMode, "safe mode")), ExitFailure, "", ""},
		{&runtimectl.CtlError{Verb: "desktop code", ExitCode: 2, Stderr: "unknown verb"}, ExitDevice, "", "adb -s emu-1 shell id"},
	}
	for _, tc := range cases {
		t.Run(tc.err.Error(), func(t *testing.T) {
			err := codeErr(context.Background(), tg, tc.err)
			var e *Error
			assert.ErrorAs(t, err, &e)
			assert.Equal(t, tc.exit, e.Code)
			assert.Equal(t, tc.reason, e.Reason)
			assert.Contains(t, e.Hint, tc.hint)
			assert.ErrorIs(t, err, tc.err)
		})
	}
}

// TestADBServer: code talks to the adb server the adb command line uses.
func TestADBServer(t *testing.T) {
	cases := []struct {
		env  []string
		want string
	}{
		{nil, "127.0.0.1:5037"},
		{[]string{"ANDROID_ADB_SERVER_PORT=5099"}, "127.0.0.1:5099"},
		{[]string{"ANDROID_ADB_SERVER_PORT=5099", "ADB_SERVER_SOCKET=tcp:10.0.0.2:5555"}, "10.0.0.2:5555"},
		{[]string{"ANDROID_ADB_SERVER_PORT=1", "ANDROID_ADB_SERVER_PORT=2"}, "127.0.0.1:2"},
	}
	for _, tc := range cases {
		o := Options{ADBEnv: append([]string{"HOME=/"}, tc.env...)}
		assert.Equal(t, tc.want, o.adbServer(), "%v", tc.env)
	}
	o := Options{Getenv: func(k string) string {
		if k == "ANDROID_ADB_SERVER_PORT" {
			return "6000"
		}
		return ""
	}}
	assert.Equal(t, "127.0.0.1:6000", o.adbServer(), "no ADBEnv: this process's environment")
}
