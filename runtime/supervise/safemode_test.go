package supervise

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The kick is what makes leaving safe mode immediate: with a poll of an
// hour, only it can make the supervisor notice the marker is gone.
func TestLeaveSafeModeKicksTheSupervisor(t *testing.T) {
	h := start(t, []string{"run", "run"}, func(o *Options) {
		os.MkdirAll(o.Root, 0o755)
		os.WriteFile(filepath.Join(o.Root, safeModeName), []byte("crash_loop\n"), 0o644)
		o.Timing.PollIdle, o.Timing.PollBusy = time.Hour, time.Hour
	})
	h.await("safe mode", func(s Status) bool { return s.State == StateSafeMode && s.RuntimePID > 0 })
	h.awaitStarts(1) // a runtime stopped before it set up its SIGTERM handler records nothing
	var kicked []int
	res, err := leaveSafeMode(h.root, func(pid int) error { kicked = append(kicked, pid); h.sup.Kick(); return nil })
	require.NoError(t, err)
	assert.Equal(t, LeftSafeMode{WasInSafeMode: true, KickedPID: os.Getpid()}, res)
	assert.Equal(t, []int{os.Getpid()}, kicked)
	st := h.await("ok after safe mode", func(s Status) bool { return s.State == StateOK && s.RuntimePID > 0 })
	assert.Equal(t, ReasonSafeModeExited, st.Reason)
	assert.False(t, st.SafeMode)
	starts := h.awaitStarts(2)
	assert.Contains(t, starts[0], "safe=1")
	assert.NotContains(t, starts[1], "safe=1")

	// Again: nothing to leave, nobody kicked.
	res, err = leaveSafeMode(h.root, func(pid int) error { kicked = append(kicked, pid); return nil })
	require.NoError(t, err)
	assert.Equal(t, LeftSafeMode{}, res)
	assert.Len(t, kicked, 1)
}

// A pid file nobody holds (the supervisor died, the pid may be reused)
// is never signalled.
func TestLeaveSafeModeStalePIDFile(t *testing.T) {
	root := t.TempDir()
	p := Paths{Root: root}
	require.NoError(t, os.MkdirAll(p.Supervisor(), 0o700))
	require.NoError(t, os.WriteFile(p.PIDFile(), []byte("1\n"), 0o644))
	require.NoError(t, os.WriteFile(p.SafeMode(), []byte("crash_loop\n"), 0o644))
	res, err := leaveSafeMode(root, func(pid int) error { t.Fatalf("kicked %d", pid); return nil })
	require.NoError(t, err)
	assert.Equal(t, LeftSafeMode{WasInSafeMode: true}, res)
	_, err = os.Lstat(p.SafeMode())
	assert.ErrorIs(t, err, os.ErrNotExist)
}

func TestLeaveSafeModeCommand(t *testing.T) {
	for _, tc := range []struct {
		name   string
		marker bool
		args   []string
		code   int
		out    string
	}{
		{"in safe mode", true, nil, ExitOK, "left safe mode; the runtime starts normally with the supervisor"},
		{"not in safe mode", false, nil, ExitOK, "not in safe mode"},
		{"extra argument", true, []string{"now"}, ExitUsage, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			if tc.marker {
				require.NoError(t, os.WriteFile(Paths{Root: root}.SafeMode(), nil, 0o644))
			}
			var out, errb bytes.Buffer
			code := Main(t.Context(), append([]string{"leave-safe-mode", "--root", root}, tc.args...), CLI{Stdout: &out, Stderr: &errb})
			require.Equal(t, tc.code, code, errb.String())
			assert.True(t, strings.Contains(out.String(), tc.out), out.String())
			_, err := os.Lstat(Paths{Root: root}.SafeMode())
			assert.Equal(t, tc.marker && tc.code != ExitOK, err == nil, "marker left")
		})
	}
}

// An API level outside the module's range is safe mode that leaving
// cannot end: the marker comes back and the runtime stays in safe mode.
func TestUnsupportedAPISafeMode(t *testing.T) {
	for _, tc := range []struct {
		name     string
		api      string
		wantSafe bool
	}{
		{"below", "34", true},
		{"above", "38", true},
		{"in range", "36", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			getprop := filepath.Join(t.TempDir(), "getprop")
			require.NoError(t, os.WriteFile(getprop, []byte("#!/bin/sh\ncase \"$1\" in sys.boot_completed) echo 1 ;; ro.build.version.sdk) echo "+tc.api+" ;; esac\n"), 0o755))
			h := start(t, []string{"run"}, func(o *Options) {
				o.Getprop, o.MinAPI, o.MaxAPI = getprop, 35, 37
				o.Timing.PollIdle, o.Timing.PollBusy = time.Hour, time.Hour
			})
			st := h.await("runtime up", func(s Status) bool { return s.RuntimePID > 0 })
			if !tc.wantSafe {
				assert.Equal(t, StateOK, st.State)
				return
			}
			assert.Equal(t, StateSafeMode, st.State)
			assert.Equal(t, ReasonUnsupportedAPI, st.Reason)
			h.awaitStarts(1)
			_, err := leaveSafeMode(h.root, func(int) error { h.sup.Kick(); return nil })
			require.NoError(t, err)
			require.Eventually(t, func() bool { return h.sup.inSafeMode() }, 10*time.Second, 5*time.Millisecond, "marker not written again")
			st = h.sup.Status()
			assert.Equal(t, StateSafeMode, st.State)
			assert.Equal(t, st.RuntimePID, h.sup.Status().RuntimePID)
			assert.Len(t, h.starts(), 1, "runtime restarted")
		})
	}
}

func TestBootCount(t *testing.T) {
	h := start(t, []string{"run"}, func(o *Options) {
		os.MkdirAll(o.Root, 0o755)
		os.WriteFile(filepath.Join(o.Root, bootCountName), []byte("41\n"), 0o644)
	})
	st := h.await("runtime up", func(s Status) bool { return s.RuntimePID > 0 })
	assert.Equal(t, int64(42), st.BootCount)
	b, err := os.ReadFile(filepath.Join(h.root, bootCountName))
	require.NoError(t, err)
	assert.Equal(t, "42\n", string(b))
	file, err := ReadStatus(h.sup.Paths().Status())
	require.NoError(t, err)
	assert.Equal(t, int64(42), file.BootCount)
}

// A runtime that shut down as asked (heartbeat stopping) is left
// stopped, reason user_stopped, until kicked.
func TestUserStoppedRuntimeLeftStopped(t *testing.T) {
	h := start(t, []string{"run", "run"}, nil)
	st := h.await("runtime up", func(s Status) bool { return s.State == StateOK && s.RuntimePID > 0 })
	h.awaitStarts(1)
	require.NoError(t, syscall.Kill(st.RuntimePID, syscall.SIGTERM))
	st = h.await("stopped", func(s Status) bool { return s.State == StateStopped })
	assert.Equal(t, ReasonUserStopped, st.Reason)
	assert.Len(t, h.starts(), 1, "restarted without a kick")
	h.sup.Kick()
	h.await("up again", func(s Status) bool { return s.State == StateOK && s.RuntimePID > 0 })
}

// The runtime cannot remove the root-owned marker: it leaves a request in
// its data directory, which the supervisor honours at its next poll as
// leave-safe-mode would. Anything but a regular file is no request.
func TestRuntimeRequestsLeavingSafeMode(t *testing.T) {
	for _, tc := range []struct {
		name  string
		write func(path string) error
		leave bool
	}{
		{"regular file", func(p string) error { return os.WriteFile(p, nil, 0o600) }, true},
		{"directory", func(p string) error { return os.Mkdir(p, 0o700) }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := start(t, []string{"run", "run"}, func(o *Options) {
				os.MkdirAll(o.Root, 0o755)
				os.WriteFile(filepath.Join(o.Root, safeModeName), []byte("crash_loop\n"), 0o644)
			})
			h.await("safe mode", func(s Status) bool { return s.State == StateSafeMode && s.RuntimePID > 0 })
			h.awaitStarts(1)
			p := Paths{Root: h.root}
			require.NoError(t, tc.write(p.LeaveRequest()))
			if !tc.leave {
				require.Eventually(t, func() bool { _, err := os.Lstat(p.LeaveRequest()); return err != nil }, 10*time.Second, 5*time.Millisecond, "request not taken")
				assert.True(t, h.sup.inSafeMode(), "a directory ended safe mode")
				assert.Equal(t, StateSafeMode, h.sup.Status().State)
				return
			}
			st := h.await("ok after safe mode", func(s Status) bool { return s.State == StateOK && s.RuntimePID > 0 })
			assert.Equal(t, ReasonSafeModeExited, st.Reason)
			assert.False(t, h.sup.inSafeMode(), "marker left")
			_, err := os.Lstat(p.LeaveRequest())
			assert.ErrorIs(t, err, os.ErrNotExist, "request left")
			starts := h.awaitStarts(2)
			assert.NotContains(t, starts[1], "safe=1")
		})
	}
}
