package console

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentoslab/agentlab/internal/testenv"
	"github.com/agentoslab/agentlab/runtime/apps/apptest"
	"github.com/agentoslab/agentlab/runtime/transport"
)

// The test binary doubles as a peer process run under other uids.
func TestMain(m *testing.M) {
	if os.Getenv("CONSOLE_TEST_PEER") == "1" {
		os.Exit(peerMain(os.Args[1]))
	}
	os.Exit(m.Run())
}

// peerMain sends one HTTP request on the socket and reports how many
// bytes came back.
func peerMain(name string) int {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := transport.Dial(ctx, name)
	if err != nil {
		fmt.Println(`{"dialError":true}`)
		return 0
	}
	c.SetDeadline(time.Now().Add(5 * time.Second))
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
	b, _ := io.ReadAll(bufio.NewReader(c))
	out, _ := json.Marshal(map[string]any{"bytes": len(b), "reply": string(b)})
	fmt.Println(string(out))
	return 0
}

func testName() string {
	var b [4]byte
	rand.Read(b[:])
	return transport.Names{Prefix: "t" + hex.EncodeToString(b[:]) + "-"}.Console()
}

// startConsole serves a console on a fresh socket name.
func startConsole(t *testing.T, a Admin, runtimeUID int) *Server {
	t.Helper()
	s, err := New(&Options{Name: testName(), RuntimeUID: runtimeUID, Admin: a})
	require.NoError(t, err)
	require.NoError(t, s.Start(t.Context()))
	t.Cleanup(s.Close)
	return s
}

// socketClient is a browser's view of the console: HTTP with cookies,
// every connection dialled to the socket (as adb forward does).
func socketClient(t *testing.T, name string) *http.Client {
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	return &http.Client{Jar: jar, Timeout: 10 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) { return transport.Dial(ctx, name) },
	}}
}

// TestServedOnTheSocket: the link, the cookie, a page and a form, over
// the real socket with the peer's credentials from the kernel.
func TestServedOnTheSocket(t *testing.T) {
	a := fullAdmin(1)
	s := startConsole(t, a, 0)
	c := socketClient(t, s.Name())
	res, err := c.Get("http://127.0.0.1:8765" + s.Path())
	require.NoError(t, err)
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode, string(body))
	assert.Equal(t, "/", res.Request.URL.Path)
	assert.Empty(t, res.Request.URL.Query().Get("token"), "the token left the address bar")
	assert.Contains(t, string(body), `id="card-req-a"`)
	calls := a.called("consent.pending")
	require.NotEmpty(t, calls)
	assert.Equal(t, os.Getuid(), calls[0].UID, "the admin API sees the socket peer's uid")
}

// TestAdmissionByPeerUID runs real processes under other uids: an app
// uid is closed without a byte; the shell uid and the runtime's uid are
// served (and answered 401 without the token).
func TestAdmissionByPeerUID(t *testing.T) {
	testenv.NeedRoot(t)
	const runtimeUID, appUID = 10099, 10123
	a := fullAdmin(0)
	s := startConsole(t, a, runtimeUID)
	bin := apptest.Stage(t, "")
	tests := []struct {
		name   string
		uid    int
		served bool
	}{
		{"app uid refused", appUID, false},
		{"shell uid served", 2000, true},
		{"runtime uid served", runtimeUID, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := apptest.Command(tt.uid, bin, []string{s.Name()}, "CONSOLE_TEST_PEER=1").Output()
			require.NoError(t, err)
			var got struct {
				DialError bool   `json:"dialError"`
				Bytes     int    `json:"bytes"`
				Reply     string `json:"reply"`
			}
			require.NoError(t, json.Unmarshal([]byte(strings.TrimSpace(string(out))), &got), string(out))
			require.False(t, got.DialError)
			if !tt.served {
				assert.Zero(t, got.Bytes, got.Reply)
				return
			}
			assert.True(t, strings.HasPrefix(got.Reply, "HTTP/1.1 401"), got.Reply)
		})
	}
	assert.Empty(t, a.calls)
}
