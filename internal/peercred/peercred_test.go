package peercred

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestOfReportsThisProcess: both ends of a unix socket pair in this
// process see this process's uid, gid and pid — what the kernel says,
// not anything sent over the socket.
func TestOfReportsThisProcess(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s")
	ln, err := net.Listen("unix", path)
	require.NoError(t, err)
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			close(accepted)
			return
		}
		accepted <- c
	}()
	client, err := net.Dial("unix", path)
	require.NoError(t, err)
	defer client.Close()
	server, ok := <-accepted
	require.True(t, ok)
	defer server.Close()

	want := Cred{UID: os.Getuid(), GID: os.Getgid(), PID: os.Getpid()}
	for name, c := range map[string]net.Conn{"server end": server, "client end": client} {
		got, err := Of(c)
		require.NoError(t, err, name)
		assert.Equal(t, want, got, name)
	}
}

// TestOfRefusesOtherConns: a connection that is not a unix socket has no
// kernel identity; Of says so instead of inventing one.
func TestOfRefusesOtherConns(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	_, err := Of(a)
	assert.True(t, errors.Is(err, ErrNotUnix), "err %v", err)
}
