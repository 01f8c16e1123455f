package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentoslab/agentlab/runtime/console"
	"github.com/agentoslab/agentlab/runtime/engine"
	"github.com/agentoslab/agentlab/runtime/transport"
)

// TestConsoleIsWired: serve's System runs the console on its socket,
// console.url gives its link, and its pages read the real admin API
// (here without an extension host, so the consent page says why).
func TestConsoleIsWired(t *testing.T) {
	names := transport.Names{Prefix: fmt.Sprintf("dc%d-", os.Getpid())}
	ctx := t.Context()
	sys, err := Open(ctx, &Options{Data: t.TempDir(), Names: names, Tools: noTools{}, AllowOwnUID: true})
	require.NoError(t, err)
	t.Cleanup(func() { sys.Close(context.Background()) })
	require.NotNil(t, sys.Console)

	raw, err := sys.Admin.Invoke(ctx, transport.Cred{UID: os.Getuid()}, "console.url", nil)
	require.NoError(t, err)
	var u console.URLInfo
	require.NoError(t, json.Unmarshal(raw, &u))
	assert.Equal(t, names.Console(), u.Socket)

	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, Timeout: 10 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) { return transport.Dial(ctx, u.Socket) },
	}}
	for _, p := range []string{u.Path, "/status", "/sessions"} {
		res, err := c.Get("http://127.0.0.1:1" + p)
		require.NoError(t, err)
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		require.Equal(t, http.StatusOK, res.StatusCode, p)
		switch p {
		case u.Path:
			assert.Contains(t, string(body), "extension host", "the consent page says why it has no cards")
		case "/status":
			assert.Contains(t, string(body), "Safe mode")
		}
	}
}

var _ engine.Tools = noTools{}
