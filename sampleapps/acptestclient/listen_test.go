package acptestclient_test

import (
	"context"
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

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
