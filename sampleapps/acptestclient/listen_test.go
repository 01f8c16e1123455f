package acptestclient_test

import (
	"context"
	"encoding/json"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentoslab/agentlab/runtime/aci/wire"
	"github.com/agentoslab/agentlab/runtime/sdk/aci"
	"github.com/agentoslab/agentlab/runtime/transport"
	"github.com/agentoslab/agentlab/sampleapps/acptestclient"
)

// listen squats a provider's socket (named app:PKG/SERVER, with the
// runtime's prefix): a peer that only checks who listens is a connection
// with no bytes, a peer that talks is counted; a held socket is inUse.
func TestListen(t *testing.T) {
	t.Parallel()
	prefix := "@atc-listen-" + strconv.FormatInt(time.Now().UnixNano(), 36) + "-"
	names := transport.Names{Prefix: prefix[1:]}
	socket := names.App("org.example.p", "srv")
	require.Equal(t, "@"+prefix[1:]+"agentos-app.org.example.p.srv", socket)
	line := `{"jsonrpc":"2.0","id":0,"method":"initialize"}`

	done := make(chan map[string]any, 1)
	go func() {
		ops, err := acptestclient.ParsePlan([]string{`{"op":"listen","as":"squat","socket":"app:org.example.p/srv","ms":30000,"readMs":200}`})
		if err != nil {
			done <- map[string]any{"parse": err.Error()}
			return
		}
		out := acptestclient.Run(context.Background(), acptestclient.Env{CallerSocket: names.Caller()}, ops)
		b, _ := json.Marshal(out)
		var m map[string]any
		json.Unmarshal(b, &m)
		done <- m
	}()
	var probe interface{ Close() error }
	require.Eventually(t, func() bool {
		c, err := transport.Dial(context.Background(), socket)
		if err != nil {
			return false
		}
		probe = c
		return true
	}, 10*time.Second, 10*time.Millisecond, "the listener comes up")
	probe.Close()
	c, err := transport.Dial(context.Background(), socket)
	require.NoError(t, err)
	_, err = c.Write([]byte(line + "\n"))
	require.NoError(t, err)
	c.Close()

	// Held by the squatter: a second listen finds it in use.
	held, err := acptestclient.ParsePlan([]string{`{"op":"listen","as":"second","socket":"` + socket + `","ms":100}`})
	require.NoError(t, err)
	second := acptestclient.Run(context.Background(), acptestclient.Env{CallerSocket: names.Caller()}, held)
	b, _ := json.Marshal(second)
	assert.Contains(t, string(b), `"second":{"listening":false,"inUse":true`)

	select {
	case m := <-done:
		r := m["r"].(map[string]any)["squat"].(map[string]any)
		assert.Equal(t, true, r["listening"])
		assert.Equal(t, float64(2), r["accepted"], "the probe and the talker")
		assert.Equal(t, float64(len(line)), r["bytesRead"])
	case <-time.After(20 * time.Second):
		t.Fatal("listen did not end readMs after its last connection")
	}
}

func TestListenNeedsSocketAndMs(t *testing.T) {
	t.Parallel()
	for _, op := range []string{`{"op":"listen","ms":100}`, `{"op":"listen","socket":"app:a/b"}`} {
		_, err := acptestclient.ParsePlan([]string{op})
		assert.ErrorIs(t, err, acptestclient.ErrPlan, op)
	}
}

// A squatter on a controlled app's ACI socket (aci:PKG/SERVER) counts an
// ACI frame, which has no newline, byte for byte; a controller that
// checks the listener's uid first sends it nothing.
func TestListenACI(t *testing.T) {
	t.Parallel()
	prefix := "atc-listen-aci-" + strconv.FormatInt(time.Now().UnixNano(), 36) + "-"
	names := transport.Names{Prefix: prefix}
	socket := names.ACI("org.example.p", "svc")

	done := make(chan map[string]any, 1)
	go func() {
		ops, err := acptestclient.ParsePlan([]string{`{"op":"listen","as":"squat","socket":"aci:org.example.p/svc","ms":30000,"readMs":200}`})
		if err != nil {
			done <- map[string]any{"parse": err.Error()}
			return
		}
		out := acptestclient.Run(context.Background(), acptestclient.Env{CallerSocket: names.Caller()}, ops)
		b, _ := json.Marshal(out)
		var m map[string]any
		json.Unmarshal(b, &m)
		done <- m
	}()
	require.Eventually(t, func() bool {
		c, err := transport.Dial(context.Background(), socket)
		if err == nil {
			c.Close()
		}
		return err == nil
	}, 10*time.Second, 10*time.Millisecond, "the listener comes up")

	ctx := context.Background()
	checked := &wire.Client{Socket: socket, UID: os.Getuid() + 1}
	require.ErrorIs(t, checked.Ping(ctx), wire.ErrPeerUID)
	payload, err := wire.EncodeRequest(&wire.Request{Method: wire.MethodPing, Version: wire.DefaultRequestVersion})
	require.NoError(t, err)
	unchecked := &wire.Client{Socket: socket, UID: os.Getuid()}
	require.Error(t, unchecked.Ping(ctx), "the squatter never answers")

	select {
	case m := <-done:
		r := m["r"].(map[string]any)["squat"].(map[string]any)
		assert.Equal(t, float64(3), r["accepted"], "the probe and both clients")
		assert.Equal(t, float64(8+len(payload)), r["bytesRead"], "only the unchecked client's frame")
	case <-time.After(20 * time.Second):
		t.Fatal("listen did not end readMs after its last connection")
	}
}

// dial on an aci: socket frames its line as an ACIS request and reads
// the ACIR answer.
func TestDialACI(t *testing.T) {
	t.Parallel()
	prefix := "atc-dial-aci-" + strconv.FormatInt(time.Now().UnixNano(), 36) + "-"
	names := transport.Names{Prefix: prefix}
	srv := aci.NewServer("svc", &aci.Options{RuntimeUIDs: []int{}})
	require.NoError(t, srv.Add(aci.NewCapability("who", "Say who calls.").
		Result("claimed", aci.TypeString, "The claimed package.").
		Handle(func(_ context.Context, c *aci.Call) (aci.Bundle, error) {
			return aci.Bundle{"claimed": aci.String(c.Caller.ClaimedPkg)}, nil
		})))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, err := srv.Start(ctx, names.ACI("org.example.p", "svc"))
	require.NoError(t, err)

	ops, err := acptestclient.ParsePlan([]string{`{"op":"dial","as":"d","socket":"aci:org.example.p/svc","line":"{\"method\":\"call\",\"capability\":\"who\",\"version\":\"1.0\",\"callId\":\"c1\",\"callerPkg\":\"org.example.liar\",\"params\":{}}","readMs":3000}`})
	require.NoError(t, err)
	b, _ := json.Marshal(acptestclient.Run(ctx, acptestclient.Env{CallerSocket: names.Caller()}, ops))
	assert.Contains(t, string(b), `"result":"data"`)
	assert.Contains(t, string(b), `org.example.liar`)
	assert.Contains(t, string(b), `"success":true`)
}
