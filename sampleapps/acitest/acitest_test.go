package acitest

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentoslab/agentlab/runtime/aci/wire"
	"github.com/agentoslab/agentlab/runtime/sdk/aci"
)

// TestCapabilities: an unconfirmed call of the dangerous capability never
// reaches its handler (the run count stays 0), and the allow-list hook
// refuses Locked.
func TestCapabilities(t *testing.T) {
	srv, err := New(nil)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	socket := fmt.Sprintf("@aci.test.%d.%s", os.Getpid(), t.Name())
	serving, err := srv.Start(ctx, socket)
	require.NoError(t, err)
	t.Cleanup(func() { cancel(); assert.NoError(t, serving.Wait()) })
	cl := &wire.Client{Socket: socket, UID: os.Getuid()}

	caps, _, err := cl.Capabilities(ctx)
	require.NoError(t, err)
	flags := map[string]bool{}
	for i := range caps {
		flags[caps[i].ID] = caps[i].NeedsConfirm()
	}
	assert.Equal(t, map[string]bool{Dangerous: true, Runs: false, Locked: false, Guarded: false, Whoami: false, wire.ProtocolCapability: false}, flags)

	for _, id := range []string{Dangerous, Locked} {
		resp, err := cl.Call(ctx, id, wire.Bundle{}, 0)
		require.NoError(t, err)
		var e *wire.Error
		require.ErrorAs(t, resp.Err(), &e, id)
		assert.Equal(t, wire.PermissionDenied, e.Code, id)
	}

	resp, err := cl.Call(ctx, Runs, wire.Bundle{}, 0)
	require.NoError(t, err)
	assert.Equal(t, int64(0), resp.Result["runs"].IntVal(), "an unconfirmed dangerous call never runs")
}

// TestRawDeclaresThePitfall: the raw server's version-string description
// reaches the controller's parser, which skips that capability only.
func TestRawDeclaresThePitfall(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	socket := fmt.Sprintf("@aci.test.%d.%s", os.Getpid(), t.Name())
	done := make(chan error, 1)
	go func() { done <- ServeRaw(ctx, socket) }()
	t.Cleanup(func() { cancel(); assert.NoError(t, <-done) })
	cl := &wire.Client{Socket: socket, UID: os.Getuid()}
	var caps []wire.Capability
	var problems []error
	require.Eventually(t, func() bool {
		var err error
		caps, problems, err = cl.Capabilities(ctx)
		return err == nil
	}, 5*time.Second, 10*time.Millisecond)
	require.Len(t, caps, 1)
	assert.Equal(t, "echo", caps[0].ID)
	require.Len(t, problems, 1)
	assert.ErrorIs(t, problems[0], wire.ErrDescriptionIsVersion)
	resp, err := cl.Call(ctx, "echo", wire.Bundle{}, 0)
	require.NoError(t, err)
	assert.Equal(t, "raw callee answered", resp.Result["said"].Str())
}

// TestWhoamiIgnoresTheClaim: a callerPkg from a peer that is not the
// runtime is reported as a claim, never as the app called for.
func TestWhoamiIgnoresTheClaim(t *testing.T) {
	for _, tc := range []struct {
		name       string
		runtime    []int
		onBehalfOf string
	}{
		{"from the runtime", []int{os.Getuid()}, "org.example.claimed"},
		{"from the app's own uid", []int{os.Getuid() + 1}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, err := New(&aci.Options{RuntimeUIDs: tc.runtime})
			require.NoError(t, err)
			ctx, cancel := context.WithCancel(context.Background())
			socket := fmt.Sprintf("@aci.test.%d.%s", os.Getpid(), t.Name())
			serving, err := srv.Start(ctx, socket)
			require.NoError(t, err)
			t.Cleanup(func() { cancel(); assert.NoError(t, serving.Wait()) })
			cl := &wire.Client{Socket: socket, UID: os.Getuid(), CallerPkg: "org.example.claimed"}
			resp, err := cl.Call(ctx, Whoami, wire.Bundle{}, 0)
			require.NoError(t, err)
			require.NoError(t, resp.Err())
			assert.Equal(t, int64(os.Getuid()), resp.Result["uid"].IntVal())
			assert.Equal(t, tc.onBehalfOf, resp.Result["on_behalf_of"].Str())
			assert.Equal(t, "org.example.claimed", resp.Result["claimed"].Str())
		})
	}
}
