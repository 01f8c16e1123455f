package aci

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentoslab/agentlab/internal/testbin"
	"github.com/agentoslab/agentlab/runtime/aci/wire"
	"github.com/agentoslab/agentlab/runtime/transport"
)

const helperEnv = "ACI_SDK_TEST_HELPER"

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) == "serve" {
		// A controlled app in a process of its own (another uid).
		srv := NewServer("echo", nil)
		srv.MustAdd(echoCap())
		if err := srv.Serve(context.Background()); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(testbin.Main(m))
}

func echoCap() *Capability {
	return NewCapability("echo", "Echo the text and say who called.").
		Param("text", TypeString, Required, "What to echo.").
		Result("reply", TypeString, "The text.").
		Result("uid", TypeInt, "The caller's uid.").
		Result("runtime", TypeBoolean, "The caller is the runtime.").
		Result("on_behalf_of", TypeString, "The app the runtime calls for.").
		Handle(func(ctx context.Context, call *Call) (Bundle, error) {
			return Bundle{"reply": String(call.String("text")), "uid": Int(int64(call.Caller.UID)),
				"runtime": Bool(call.Caller.Runtime), "on_behalf_of": String(call.Caller.OnBehalfOf)}, nil
		})
}

var seq atomic.Int64

func sockName(t *testing.T) string {
	if !transport.AbstractSupported() {
		t.Skip("needs abstract unix sockets (Linux)")
	}
	return fmt.Sprintf("@aci-sdk-test-%d-%d", os.Getpid(), seq.Add(1))
}

// serve runs srv on a fresh socket for the test and returns a client of it.
func serve(t *testing.T, srv *Server) *wire.Client {
	t.Helper()
	name := sockName(t)
	ctx, cancel := context.WithCancel(context.Background())
	sv, err := srv.Start(ctx, name)
	require.NoError(t, err)
	t.Cleanup(func() {
		cancel()
		require.NoError(t, sv.Wait())
	})
	return &wire.Client{Socket: name, UID: os.Getuid(), CallerPkg: "org.agentos.sample.notes"}
}

func call(t *testing.T, cl *wire.Client, capability string, params wire.Bundle) *wire.Response {
	t.Helper()
	resp, err := cl.Call(context.Background(), capability, params, 0)
	require.NoError(t, err)
	return resp
}

func TestBuilderRefusesBadDeclarations(t *testing.T) {
	h := func(context.Context, *Call) (Bundle, error) { return nil, nil }
	tests := []struct {
		name string
		c    *Capability
		want error
	}{
		{"version for a description (upstream v1.0.6 bug)", NewCapability("browser_open", "1.0").Handle(h), ErrDescriptionVersion},
		{"no description", NewCapability("x", "").Handle(h), ErrNoDescription},
		{"bad id", NewCapability("browser open", "Open.").Handle(h), ErrBadID},
		{"unknown type", NewCapability("x", "X.").Param("a", "uuid", Optional, "").Handle(h), ErrBadType},
		{"duplicate param", NewCapability("x", "X.").Param("a", TypeInt, Optional, "").Param("a", TypeString, Optional, "").Handle(h), ErrDuplicate},
		{"no handler", NewCapability("x", "X."), ErrNoHandler},
		{"zero timeout", NewCapability("x", "X.").Timeout(0).Handle(h), ErrBadTimeout},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := NewServer("s", nil)
			assert.ErrorIs(t, srv.Add(tt.c), tt.want)
			assert.Len(t, srv.Capabilities(), 1, "nothing but aci_protocol was registered")
		})
	}
	srv := NewServer("s", nil)
	require.NoError(t, srv.Add(echoCap()))
	assert.ErrorIs(t, srv.Add(echoCap()), ErrDuplicate)
	assert.Error(t, NewCapability("x", "X.").Param("user_confirmed", TypeBoolean, Optional, "").Handle(h).Err(), "the controller's param cannot be declared")
}

func TestCapabilitiesAndProtocol(t *testing.T) {
	srv := NewServer("s", nil)
	srv.MustAdd(echoCap().Timeout(20 * time.Second).Flags(FlagBackground))
	cl := serve(t, srv)
	caps, problems, err := cl.Capabilities(context.Background())
	require.NoError(t, err)
	assert.Empty(t, problems)
	require.Len(t, caps, 2)
	assert.Equal(t, "echo", caps[0].ID)
	assert.Equal(t, 20*time.Second, caps[0].SyncTimeout, "the controller learns the capability's own budget")
	assert.Equal(t, wire.TypeString, caps[0].Params[0].Type)
	assert.Equal(t, wire.ProtocolCapability, caps[1].ID)

	resp := call(t, cl, wire.ProtocolCapability, nil)
	require.NoError(t, resp.Err())
	got, err := wire.Negotiate(resp.Result[wire.ResultSupported].Str())
	require.NoError(t, err)
	assert.Equal(t, wire.ProtocolV1, got)
}

// Arguments reach the handler in their declared types; nothing the
// controller sent is dropped silently (upstream's getString on a number).
func TestArgumentsAreTyped(t *testing.T) {
	calls := make(chan *Call, 1)
	srv := NewServer("s", nil)
	srv.MustAdd(NewCapability("typed", "Take typed params.").
		Param("limit", TypeInt, Optional, "").
		Param("tls_verify", TypeBoolean, Optional, "").
		Param("legacy", TypeString, Optional, "").
		Param("url", TypeString, Required, "").
		Handle(func(ctx context.Context, c *Call) (Bundle, error) { calls <- c; return nil, nil }))
	cl := serve(t, srv)

	resp := call(t, cl, "typed", wire.Bundle{"url": wire.String("u"), "limit": wire.String("50"), "tls_verify": wire.String("false"), "legacy": wire.Int(7), "_aci_token": wire.String("aci_token_secret")})
	require.NoError(t, resp.Err())
	seen := <-calls
	assert.Equal(t, int64(50), seen.Int("limit"))
	assert.True(t, seen.Has("tls_verify"))
	assert.False(t, seen.BoolOr("tls_verify", true), "tls_verify=false as text is honoured, not replaced by the default")
	assert.Equal(t, "7", seen.String("legacy"))
	assert.NotContains(t, seen.Params, "_aci_token", "upstream's token never reaches the handler")

	for name, params := range map[string]wire.Bundle{
		"missing required parameter url": {"limit": wire.Int(1)},
		`unknown parameter "confirm"`:    {"url": wire.String("u"), "confirm": wire.Bool(true)},
		"parameter limit":                {"url": wire.String("u"), "limit": wire.String("many")},
		"parameter tls_verify":           {"url": wire.String("u"), "tls_verify": wire.Int(0)},
	} {
		resp := call(t, cl, "typed", params)
		assert.ErrorIs(t, resp.Err(), wire.BadRequest, name)
		assert.Contains(t, resp.ErrorMessage, name)
	}
	resp = call(t, cl, "nope", nil)
	assert.ErrorIs(t, resp.Err(), wire.CapabilityNotFound)
}

func TestResultsMustBeDeclared(t *testing.T) {
	srv := NewServer("s", nil)
	srv.MustAdd(NewCapability("info", "Report the version.").
		Result("version", TypeString, "").
		Handle(func(ctx context.Context, c *Call) (Bundle, error) {
			// upstream's browser_info declared version but returned versionName
			return Bundle{"versionName": String("1.0")}, nil
		}))
	srv.MustAdd(NewCapability("typed_info", "Report the version code.").
		Result("version_code", TypeInt, "").
		Handle(func(ctx context.Context, c *Call) (Bundle, error) {
			return Bundle{"version_code": String("3")}, nil
		}))
	cl := serve(t, srv)
	resp := call(t, cl, "info", nil)
	assert.ErrorIs(t, resp.Err(), wire.Internal)
	assert.Contains(t, resp.ErrorMessage, `result key "versionName" is not declared`)
	resp = call(t, cl, "typed_info", nil)
	assert.Contains(t, resp.ErrorMessage, "result key version_code is a string, declared int")
}

func TestHandlerErrors(t *testing.T) {
	srv := NewServer("s", nil)
	srv.MustAdd(NewCapability("coded", "Fail with a code.").Handle(func(ctx context.Context, c *Call) (Bundle, error) {
		return nil, Errorf(CodeUnsupported, "not supported by this engine")
	}))
	srv.MustAdd(NewCapability("plain", "Fail plainly.").Handle(func(ctx context.Context, c *Call) (Bundle, error) {
		return nil, errors.New("disk full")
	}))
	srv.MustAdd(NewCapability("panics", "Panic.").Handle(func(ctx context.Context, c *Call) (Bundle, error) {
		panic("boom")
	}))
	cl := serve(t, srv)
	resp := call(t, cl, "coded", nil)
	assert.Equal(t, int(wire.Unsupported), resp.ErrorCode)
	assert.Equal(t, "not supported by this engine", resp.ErrorMessage)
	resp = call(t, cl, "plain", nil)
	assert.Equal(t, int(wire.Internal), resp.ErrorCode)
	assert.Equal(t, "plain failed: disk full", resp.ErrorMessage)
	resp = call(t, cl, "panics", nil)
	assert.Equal(t, "panics failed: panic: boom", resp.ErrorMessage)
	require.NoError(t, cl.Ping(context.Background()), "a panic does not take the server down")
}

// Layer 5 on the callee's side: a confirm capability runs only with the
// runtime's user_confirmed.
func TestConfirmationIsChecked(t *testing.T) {
	var ran atomic.Int64
	h := func(ctx context.Context, c *Call) (Bundle, error) {
		ran.Add(1)
		assert.True(t, c.UserConfirmed)
		return nil, nil
	}
	srv := NewServer("s", nil)
	srv.MustAdd(NewCapability("danger_action", "Do something risky.").UserConfirm().Handle(h))
	srv.MustAdd(NewCapability("wipe", "Wipe the data.").Flags(FlagDangerous).Handle(h))
	cl := serve(t, srv)
	for _, id := range []string{"danger_action", "wipe"} {
		resp := call(t, cl, id, nil)
		assert.ErrorIs(t, resp.Err(), wire.PermissionDenied, id)
		resp = call(t, cl, id, wire.Bundle{"user_confirmed": wire.Bool(false)})
		assert.ErrorIs(t, resp.Err(), wire.PermissionDenied, id)
		resp = call(t, cl, id, wire.Bundle{"user_confirmed": wire.Bool(true)})
		require.NoError(t, resp.Err(), id)
	}
	assert.Equal(t, int64(2), ran.Load())
}

// The permission hook sees the kernel's caller; callerPkg counts only as
// the runtime's word about whom it calls for.
func TestPermissionHookSeesTheKernelCaller(t *testing.T) {
	seen := make(chan Caller, 2)
	srv := NewServer("s", &Options{
		RuntimeUIDs: []int{os.Getuid() + 777}, // this process is the app itself, not the runtime
		Allow: func(ctx context.Context, c Caller, capability wire.Capability) error {
			seen <- c
			if capability.ID == "echo" {
				return nil
			}
			return errors.New("only echo is allowed")
		},
	})
	srv.MustAdd(echoCap())
	srv.MustAdd(NewCapability("secret", "A secret.").Handle(func(context.Context, *Call) (Bundle, error) { return nil, nil }))
	cl := serve(t, srv)
	cl.CallerPkg = "com.ai.assistance.quro" // a spoofed claim
	resp := call(t, cl, "echo", wire.Bundle{"text": wire.String("hi")})
	require.NoError(t, resp.Err())
	got := <-seen
	assert.Equal(t, os.Getuid(), got.UID)
	assert.Equal(t, os.Getpid(), got.PID)
	assert.False(t, got.Runtime)
	assert.Empty(t, got.OnBehalfOf, "a claim from a peer that is not the runtime is not an identity")
	assert.Equal(t, "com.ai.assistance.quro", got.ClaimedPkg)
	assert.Equal(t, "", resp.Result["on_behalf_of"].Str())

	resp = call(t, cl, "secret", nil)
	assert.ErrorIs(t, resp.Err(), wire.PermissionDenied)
	assert.Equal(t, "only echo is allowed", resp.ErrorMessage)
}

func TestAsyncProgress(t *testing.T) {
	srv := NewServer("s", nil)
	srv.MustAdd(NewCapability("work", "Work in steps.").Result("steps", TypeInt, "").Handle(func(ctx context.Context, c *Call) (Bundle, error) {
		for _, p := range []int{10, 5, 60, 150} {
			c.Progress(p, fmt.Sprint("step ", p))
		}
		return Bundle{"steps": Int(4)}, nil
	}))
	cl := serve(t, srv)
	var seen []wire.Progress
	resp, err := cl.CallAsync(context.Background(), "work", nil, func(p wire.Progress) { seen = append(seen, p) })
	require.NoError(t, err)
	require.NoError(t, resp.Err())
	assert.Equal(t, int64(4), resp.Result["steps"].IntVal())
	assert.Equal(t, []wire.Progress{{Percent: 10, Message: "step 10"}, {Percent: 10, Message: "step 5"}, {Percent: 60, Message: "step 60"}, {Percent: 100, Message: "step 150"}}, seen,
		"progress is clamped to 0–100 and never goes back")

	// A sync call of the same capability sends no progress frames.
	resp = call(t, cl, "work", nil)
	require.NoError(t, resp.Err())
}

// Upstream's controller gave up after 15 s and left the callee's worker
// running. Here the handler's context ends both at its own budget and
// when the controller gives up.
func TestCancellationReachesTheHandler(t *testing.T) {
	cancelled := make(chan error, 2)
	started := make(chan struct{}, 3)
	block := func(ctx context.Context, c *Call) (Bundle, error) {
		started <- struct{}{}
		<-ctx.Done()
		cancelled <- context.Cause(ctx)
		return nil, ctx.Err()
	}
	srv := NewServer("s", nil)
	srv.MustAdd(NewCapability("own_budget", "Block past its budget.").Timeout(30 * time.Millisecond).Handle(block))
	srv.MustAdd(NewCapability("long", "Block.").Handle(block))
	cl := serve(t, srv)

	resp := call(t, cl, "own_budget", nil)
	assert.ErrorIs(t, resp.Err(), wire.Timeout, "the SDK answers Timeout itself")
	assert.ErrorIs(t, <-cancelled, wire.Timeout)

	_, err := cl.Call(context.Background(), "long", nil, 30*time.Millisecond)
	assert.ErrorIs(t, err, wire.Timeout, "the controller's own timeout")
	select {
	case cause := <-cancelled:
		assert.ErrorIs(t, cause, errPeerGone)
	case <-time.After(5 * time.Second):
		t.Fatal("the handler kept running after the controller gave up")
	}

	ctx, cancel := context.WithCancel(context.Background())
	<-started
	<-started
	go func() {
		<-started // the async call is running; the controller abandons it
		cancel()
	}()
	cl.CallAsync(ctx, "long", nil, nil)
	select {
	case <-cancelled:
	case <-time.After(5 * time.Second):
		t.Fatal("an abandoned async call kept running")
	}
}

func TestLargeResult(t *testing.T) {
	srv := NewServer("s", nil)
	srv.MustAdd(NewCapability("read", "Read a big page.").Large("html", "The page.").Handle(func(ctx context.Context, c *Call) (Bundle, error) {
		b := Bundle{}
		w := c.LargeWriter("html", wire.MarkerHTML)
		for range 20_000 {
			fmt.Fprint(w, "<div>row</div>")
		}
		w.Put(b)
		return b, nil
	}))
	cl := serve(t, srv)
	resp := call(t, cl, "read", nil)
	require.NoError(t, resp.Err())
	assert.True(t, resp.Result[wire.KeyTruncated].BoolVal())
	full, errs := wire.Expand(resp.Result)
	require.Empty(t, errs)
	assert.Len(t, full["html"], 20_000*len("<div>row</div>"))
}

// A probe (connect, nothing sent) — the launcher's readiness check — is
// tolerated and the server keeps serving.
func TestProbeIsTolerated(t *testing.T) {
	srv := NewServer("s", nil)
	srv.MustAdd(echoCap())
	cl := serve(t, srv)
	c, err := cl.Dial(context.Background())
	require.NoError(t, err)
	c.Close()
	resp := call(t, cl, "echo", wire.Bundle{"text": wire.String("after probe")})
	require.NoError(t, resp.Err())
}

// startHelper runs the echo app as uid in a process of its own.
func startHelper(t *testing.T, uid int, runtimeUID int) string {
	t.Helper()
	if os.Getuid() != 0 {
		t.Skip("needs root to run the app as another uid")
	}
	self, err := testbin.Self()
	require.NoError(t, err)
	name := sockName(t)
	cmd := exec.Command(self)
	cmd.Env = []string{helperEnv + "=serve", EnvSocket + "=" + name, EnvRuntimeUID + "=" + strconv.Itoa(runtimeUID)}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid)}}
	cmd.Stderr = os.Stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	require.Eventually(t, func() bool {
		c, err := transport.Dial(context.Background(), name)
		if err == nil {
			c.Close()
		}
		return err == nil
	}, 10*time.Second, 10*time.Millisecond)
	return name
}

// Admission by kernel uid, across processes: the runtime's uid is served
// and vouches for callerPkg; any other uid gets nothing at all.
func TestAdmissionAcrossUIDs(t *testing.T) {
	const appUID = 54321
	name := startHelper(t, appUID, os.Getuid())
	cl := &wire.Client{Socket: name, UID: appUID, CallerPkg: "org.agentos.sample.notes"}
	resp, err := cl.Call(context.Background(), "echo", wire.Bundle{"text": wire.String("hi")}, 0)
	require.NoError(t, err)
	require.NoError(t, resp.Err())
	assert.Equal(t, int64(os.Getuid()), resp.Result["uid"].IntVal())
	assert.True(t, resp.Result["runtime"].BoolVal())
	assert.Equal(t, "org.agentos.sample.notes", resp.Result["on_behalf_of"].Str())

	other := startHelper(t, appUID+1, appUID+2) // its runtime is someone else
	cl = &wire.Client{Socket: other, UID: appUID + 1}
	_, err = cl.Call(context.Background(), "echo", wire.Bundle{"text": wire.String("hi")}, 0)
	assert.ErrorIs(t, err, wire.ConnectionDied, "closed without an answer")
	c, err := cl.Dial(context.Background())
	require.NoError(t, err)
	defer c.Close()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	n, err := c.Read(make([]byte, 1))
	assert.Equal(t, 0, n)
	assert.False(t, errors.Is(err, os.ErrDeadlineExceeded), "the refused peer is closed at once: %v", err)
	var ne net.Error
	assert.False(t, errors.As(err, &ne) && ne.Timeout())
}
