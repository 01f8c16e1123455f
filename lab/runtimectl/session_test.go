package runtimectl

import (
	"bufio"
	"context"
	"encoding/json"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentoslab/agentlab/devices"
	"github.com/agentoslab/agentlab/runtime/admin"
	"github.com/agentoslab/agentlab/runtime/errcode"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// streamDevice is a fakeDevice whose SuStream serves `ctl --lines`
// in-process: serve answers each request; lines=false plays an agentosd
// without --lines (the stream ends at once).
type streamDevice struct {
	fakeDevice
	lines bool
	serve func(admin.LinesRequest) admin.LinesResponse

	mu      sync.Mutex
	opened  int
	cmd     string
	reqs    []admin.LinesRequest
	streams []net.Conn // the device ends
	hang    chan struct{}
}

func (d *streamDevice) SuStream(ctx context.Context, cmd string) (net.Conn, error) {
	host, dev := net.Pipe()
	d.mu.Lock()
	d.opened++
	d.cmd = cmd
	d.streams = append(d.streams, dev)
	d.mu.Unlock()
	go func() {
		defer dev.Close()
		if !d.lines {
			return
		}
		sc := bufio.NewScanner(dev)
		for sc.Scan() {
			var req admin.LinesRequest
			if json.Unmarshal(sc.Bytes(), &req) != nil {
				return
			}
			d.mu.Lock()
			d.reqs = append(d.reqs, req)
			hang := d.hang
			d.mu.Unlock()
			if hang != nil {
				<-hang
				return
			}
			b, _ := json.Marshal(d.serve(req))
			if _, err := dev.Write(append(b, '\n')); err != nil {
				return
			}
		}
	}()
	return host, nil
}

func statusAnswer(admin.LinesRequest) admin.LinesResponse {
	return admin.LinesResponse{Stdout: `{"version":"1.0","pid":42}` + "\n"}
}

// Calls share one kept session, carry the same arguments a one-shot
// command line would, and run no one-shot process: a lab that fell back
// silently would pay 20–50 ms per call again.
func TestSessionCarriesCalls(t *testing.T) {
	d := &streamDevice{lines: true, serve: func(r admin.LinesRequest) admin.LinesResponse {
		if r.Args[len(r.Args)-1] == "refuse" {
			return admin.LinesResponse{Exit: admin.ExitFailed, Stdout: `{"error":{"code":-32042,"message":"invalid_state: no","data":{"agentosCode":"invalid_state","retryable":false}}}` + "\n"}
		}
		return statusAnswer(r)
	}}
	d.answer = func(cmd string) (devices.Result, error) {
		t.Fatalf("one-shot call %q", cmd)
		return devices.Result{}, nil
	}
	c := New(d, &Options{SocketPrefix: "t1."})
	defer c.Close()
	ctx := context.Background()
	for range 5 {
		st, err := c.Status(ctx)
		require.NoError(t, err)
		assert.Equal(t, 42, st.PID)
	}
	err := c.Call(ctx, nil, "test", "refuse")
	require.ErrorIs(t, err, errcode.InvalidState, "a refusal decodes as on the one-shot path")

	assert.Equal(t, 1, d.opened, "one session for sequential calls")
	assert.Equal(t, "'"+DefaultAgentosd+"' ctl --lines 2>/dev/null", d.cmd)
	assert.Equal(t, []string{"--json", "--socket-prefix", "t1.", "status"}, d.reqs[0].Args)
	assert.Empty(t, d.reqs[0].Stdin)
}

// The key rides in the request's stdin: never an argument, never a file.
func TestSessionSecretOnStdin(t *testing.T) {
	d := &streamDevice{lines: true, serve: func(admin.LinesRequest) admin.LinesResponse {
		return admin.LinesResponse{Stdout: `{"configured":true,"keySet":true}` + "\n"}
	}}
	c := New(d, nil)
	defer c.Close()
	const key = "sk-lab-0123456789"
	_, err := c.ModelSet(context.Background(), ModelConfig{Provider: "openai"}, key)
	require.NoError(t, err)
	require.Len(t, d.reqs, 1)
	assert.Equal(t, key, d.reqs[0].Stdin)
	assert.NotContains(t, strings.Join(d.reqs[0].Args, " "), key)
	assert.Empty(t, d.pushed, "no secret file")
}

// An agentosd without --lines (an older module): the call runs one-shot,
// and so do the next ones, with no second attempt at a session.
func TestSessionFallsBackWithoutLines(t *testing.T) {
	d := &streamDevice{lines: false}
	d.answer = ok(`{"version":"0.9","pid":7}`)
	c := New(d, nil)
	for range 3 {
		st, err := c.Status(context.Background())
		require.NoError(t, err)
		assert.Equal(t, 7, st.PID)
	}
	assert.Equal(t, 1, d.opened)
	assert.Len(t, d.cmds, 3)
}

// A session closed while idle (the device rebooted) is not used: the
// next call opens a new one and succeeds.
func TestSessionReplacesDeadIdle(t *testing.T) {
	d := &streamDevice{lines: true, serve: statusAnswer}
	c := New(d, nil)
	defer c.Close()
	ctx := context.Background()
	_, err := c.Status(ctx)
	require.NoError(t, err)
	d.mu.Lock()
	d.streams[0].Close()
	d.mu.Unlock()
	_, err = c.Status(ctx)
	require.NoError(t, err)
	assert.Equal(t, 2, d.opened)
	assert.Empty(t, d.cmds, "no one-shot call")
}

// A session that dies mid-call, once sessions work, is an error: the call
// may have run on the device, so it is never run a second time one-shot.
func TestSessionDeathMidCallIsNotRetried(t *testing.T) {
	d := &streamDevice{lines: true, serve: statusAnswer}
	d.answer = func(cmd string) (devices.Result, error) {
		t.Fatalf("retried one-shot: %q", cmd)
		return devices.Result{}, nil
	}
	c := New(d, nil)
	defer c.Close()
	ctx := context.Background()
	_, err := c.Status(ctx)
	require.NoError(t, err)

	d.mu.Lock()
	d.hang = make(chan struct{})
	d.streams[0].Close() // force a fresh session for the next call
	d.mu.Unlock()
	go func() {
		require.Eventually(t, func() bool { d.mu.Lock(); defer d.mu.Unlock(); return len(d.reqs) == 2 }, 5*time.Second, time.Millisecond)
		close(d.hang) // the device side ends without an answer
	}()
	err = c.Call(ctx, nil, "consent", "respond", "c1", "allow_once")
	require.Error(t, err)
	assert.NotErrorIs(t, err, errNoLines)
}

// A call whose context ends returns at once with the context's error.
func TestSessionHonoursContext(t *testing.T) {
	d := &streamDevice{lines: true, serve: statusAnswer, hang: make(chan struct{})}
	defer close(d.hang)
	c := New(d, nil)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := c.Status(ctx)
	require.ErrorIs(t, err, context.DeadlineExceeded)
}

// OneShot and Close both send calls down the one-shot path.
func TestSessionOneShot(t *testing.T) {
	d := &streamDevice{lines: true, serve: statusAnswer}
	d.answer = ok(`{"version":"1.0","pid":9}`)
	_, err := New(d, &Options{OneShot: true}).Status(context.Background())
	require.NoError(t, err)
	assert.Zero(t, d.opened)

	c := New(d, nil)
	_, err = c.Status(context.Background())
	require.NoError(t, err)
	require.NoError(t, c.Close())
	_, err = c.Status(context.Background())
	require.NoError(t, err)
	assert.Equal(t, 1, d.opened)
	assert.Len(t, d.cmds, 2)
}
