package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentoslab/agentlab/internal/syncbuf"
	"github.com/agentoslab/agentlab/internal/testbin"
	"github.com/agentoslab/agentlab/runtime/clock/labclock"
	"github.com/agentoslab/agentlab/runtime/transport"
)

// labBin is agentosd as the lab builds it for virtual devices.
func labBin(tb testing.TB) string {
	tb.Helper()
	return testbin.Path(tb, ".", "-tags", "agentos_labclock")
}

// startServeOwner starts serve as a device runs it (desktop pairing
// available, no own-uid ACP) and waits until its admin socket answers.
func startServeOwner(t *testing.T, bin, data, prefix string) *server {
	t.Helper()
	s := &server{t: t, cmd: exec.Command(bin, "serve", "--data", data, "--socket-prefix", prefix),
		names: transport.Names{Prefix: prefix}, data: data, stderr: &syncbuf.Buffer{}, exited: make(chan struct{})}
	s.cmd.Stderr = s.stderr
	require.NoError(t, s.cmd.Start())
	go func() { s.err = s.cmd.Wait(); close(s.exited) }()
	t.Cleanup(func() {
		s.cmd.Process.Kill()
		<-s.exited
	})
	require.Eventually(t, func() bool {
		select {
		case <-s.exited:
			t.Fatalf("serve exited: %v\n%s", s.err, s.stderr)
		default:
		}
		code, _ := ctlWith(t, bin, prefix, "status")
		return code == 0
	}, 20*time.Second, 10*time.Millisecond, "serve's admin socket did not answer")
	return s
}

// ctlWith runs bin's `ctl` against the runtime with prefix.
func ctlWith(t *testing.T, bin, prefix string, args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"ctl", "--socket-prefix", prefix}, args...)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), out.String()
	}
	require.NoError(t, err)
	return 0, out.String()
}

func clockInfo(t *testing.T, out string) labclock.Info {
	t.Helper()
	var in labclock.Info
	require.NoError(t, json.Unmarshal([]byte(out), &in), out)
	return in
}

// The lab's build: a pairing code valid for five minutes is expired
// within a second of `ctl clock advance 5m` — the runtime's own check and
// a pairing attempt with it both say so — and the virtual time survives
// a restart of serve.
func TestLabClockExpiresAPairingCode(t *testing.T) {
	t.Parallel()
	bin := labBin(t)
	data, prefix := dataDir(t), uniquePrefix()
	s := startServeOwner(t, bin, data, prefix)

	code, out := ctlWith(t, bin, prefix, "clock", "show", "--json")
	require.Equal(t, 0, code, out)
	require.Equal(t, labclock.KindVirtual, clockInfo(t, out).Kind)
	require.Zero(t, clockInfo(t, out).OffsetMs)

	code, out = ctlWith(t, bin, prefix, "desktop", "enable", "--json")
	require.Equal(t, 0, code, out)
	var pc struct {
		Code        string `json:"code"`
		ExpiresInMs int64  `json:"expiresInMs"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &pc))
	require.Equal(t, (5 * time.Minute).Milliseconds(), pc.ExpiresInMs)
	status := func() (active bool) {
		code, out := ctlWith(t, bin, prefix, "desktop", "status", "--json")
		require.Equal(t, 0, code, out)
		var st struct {
			CodeActive bool `json:"codeActive"`
		}
		require.NoError(t, json.Unmarshal([]byte(out), &st))
		return st.CodeActive
	}
	require.True(t, status())

	advanced := time.Now()
	code, out = ctlWith(t, bin, prefix, "clock", "advance", "5m")
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, "clock: virtual")
	assert.Contains(t, out, "5m0s ahead of the real clock")
	require.Eventually(t, func() bool { return !status() }, time.Second, 10*time.Millisecond,
		"the code is still active after advancing the clock 5 minutes")
	t.Logf("code expired %v after the advance began", time.Since(advanced))

	if os.Getuid() == 0 { // the desktop socket admits root and shell only
		c, err := transport.Dial(context.Background(), transport.Names{Prefix: prefix}.ACP())
		require.NoError(t, err)
		defer c.Close()
		fmt.Fprintf(c, `{"jsonrpc":"2.0","id":0,"method":"_org.agentos/pair","params":{"code":%q}}`+"\n", pc.Code)
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		line, err := bufio.NewReader(c).ReadString('\n')
		require.NoError(t, err)
		assert.Contains(t, line, "the pairing code has expired")
	}

	// Restarted, serve reads its offset back: time did not go back.
	require.NoError(t, s.cmd.Process.Signal(syscall.SIGTERM))
	<-s.exited
	startServeOwner(t, bin, data, prefix)
	code, out = ctlWith(t, bin, prefix, "clock", "show", "--json")
	require.Equal(t, 0, code, out)
	before := clockInfo(t, out)
	assert.Equal(t, (5 * time.Minute).Milliseconds(), before.OffsetMs)
	assert.InDelta(t, time.Now().Add(5*time.Minute).UnixMilli(), before.NowMs, 10000)
}

// A release build has the verbs but the real clock only: advance is
// refused with the clear error and changes nothing, show says "real".
func TestReleaseRefusesClockAdvance(t *testing.T) {
	t.Parallel()
	bin := release(t)
	data, prefix := dataDir(t), uniquePrefix()
	startServeOwner(t, bin, data, prefix)

	code, out := ctlWith(t, bin, prefix, "clock", "advance", "5m")
	assert.Equal(t, 1, code, out)
	assert.Contains(t, out, "this build has the real clock only")
	code, out = ctlWith(t, bin, prefix, "clock", "advance", "5m", "--json")
	assert.Equal(t, 1, code, out)
	assert.Contains(t, out, `"agentosCode":"unsupported"`)

	code, out = ctlWith(t, bin, prefix, "clock", "show")
	require.Equal(t, 0, code, out)
	assert.True(t, strings.HasPrefix(out, "clock: real (this build has the real clock only)"), out)
	code, out = ctlWith(t, bin, prefix, "clock", "show", "--json")
	require.Equal(t, 0, code, out)
	in := clockInfo(t, out)
	assert.Equal(t, labclock.KindReal, in.Kind)
	assert.Zero(t, in.OffsetMs)
	assert.InDelta(t, time.Now().UnixMilli(), in.NowMs, 10000)
	_, err := os.Stat(data + "/" + labclock.FileName)
	assert.ErrorIs(t, err, os.ErrNotExist, "a release build wrote a clock file")
}
