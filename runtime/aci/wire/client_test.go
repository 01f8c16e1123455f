package wire

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentoslab/agentlab/runtime/transport"
)

var sockSeq atomic.Int64

// rawServer listens on a fresh abstract name and runs serve for each
// connection; it is a hand-written peer, so the client is tested against
// bytes it cannot make itself (bad frames, wrong call ids).
func rawServer(t *testing.T, serve func(c net.Conn)) string {
	t.Helper()
	if !transport.AbstractSupported() {
		t.Skip("needs abstract unix sockets (Linux)")
	}
	name := fmt.Sprintf("@aci-wire-test-%d-%d", os.Getpid(), sockSeq.Add(1))
	ln, err := transport.Listen(name)
	require.NoError(t, err)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			serve(c)
			c.Close()
		}
	}()
	t.Cleanup(func() { ln.Close(); <-done })
	return name
}

func readReq(t *testing.T, c net.Conn) *Request {
	p, err := ReadFrame(c, MagicRequest)
	if err != nil {
		return nil
	}
	r, err := DecodeRequest(p)
	if err != nil {
		return nil
	}
	return r
}

func reply(c net.Conn, r *Response) {
	p, _ := EncodeResponse(r)
	WriteFrame(c, MagicResponse, p)
}

func TestClientPingAndCall(t *testing.T) {
	name := rawServer(t, func(c net.Conn) {
		r := readReq(t, c)
		switch r.Method {
		case MethodPing:
			reply(c, &Response{Success: true, Pong: true})
		case MethodCall:
			reply(c, &Response{Success: true, CallID: r.CallID, Result: Bundle{"echo": r.Params["text"], "caller": String(r.CallerPkg)}})
		}
	})
	cl := &Client{Socket: name, UID: os.Getuid(), CallerPkg: "org.agentos.sample.notes"}
	require.NoError(t, cl.Ping(context.Background()))
	resp, err := cl.Call(context.Background(), "echo", Bundle{"text": String("hi")}, 0)
	require.NoError(t, err)
	require.NoError(t, resp.Err())
	assert.Equal(t, "hi", resp.Result["echo"].Str())
	assert.Equal(t, "org.agentos.sample.notes", resp.Result["caller"].Str())
}

// Upstream's LocalSocket had no peer check: any app could listen on the
// name first and receive the calls. The client refuses a listener of
// another uid before it writes a byte.
func TestClientRefusesSquatter(t *testing.T) {
	got := make(chan int, 1)
	name := rawServer(t, func(c net.Conn) {
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		n, _ := io.Copy(io.Discard, c)
		got <- int(n)
	})
	cl := &Client{Socket: name, UID: os.Getuid() + 4242}
	_, err := cl.Call(context.Background(), "echo", Bundle{"secret": String("token")}, 0)
	require.Error(t, err)
	assert.ErrorIs(t, err, ErrPeerUID)
	var pe *PeerError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, os.Getuid(), pe.Got)
	assert.Equal(t, 0, <-got, "the squatter received nothing")
}

func TestClientAsyncProgressInOrder(t *testing.T) {
	name := rawServer(t, func(c net.Conn) {
		r := readReq(t, c)
		for _, p := range []int{0, 10, 10, 55, 100} {
			reply(c, &Response{CallID: r.CallID, Progress: &Progress{Percent: p, Message: fmt.Sprint("at ", p)}})
		}
		reply(c, &Response{Success: true, CallID: r.CallID, Result: Bundle{"done": Bool(true)}})
	})
	cl := &Client{Socket: name, UID: os.Getuid()}
	var seen []int
	resp, err := cl.CallAsync(context.Background(), "work", nil, func(p Progress) { seen = append(seen, p.Percent) })
	require.NoError(t, err)
	assert.True(t, resp.Result["done"].BoolVal())
	assert.Equal(t, []int{0, 10, 10, 55, 100}, seen)
}

func TestClientProtocolViolations(t *testing.T) {
	tests := []struct {
		name  string
		serve func(c net.Conn, r *Request)
		async bool
	}{
		{"answer for another call", func(c net.Conn, r *Request) {
			reply(c, &Response{Success: true, CallID: "someone-else"})
		}, false},
		{"progress going backwards", func(c net.Conn, r *Request) {
			reply(c, &Response{CallID: r.CallID, Progress: &Progress{Percent: 50}})
			reply(c, &Response{CallID: r.CallID, Progress: &Progress{Percent: 20}})
		}, true},
		{"progress on a sync call", func(c net.Conn, r *Request) {
			reply(c, &Response{CallID: r.CallID, Progress: &Progress{Percent: 50}})
		}, false},
		{"request magic in a response", func(c net.Conn, r *Request) {
			WriteFrame(c, MagicRequest, []byte(`{"success":true}`))
		}, false},
		{"not JSON", func(c net.Conn, r *Request) {
			WriteFrame(c, MagicResponse, []byte(`success`))
		}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name := rawServer(t, func(c net.Conn) { tt.serve(c, readReq(t, c)) })
			cl := &Client{Socket: name, UID: os.Getuid()}
			var err error
			if tt.async {
				_, err = cl.CallAsync(context.Background(), "x", nil, nil)
			} else {
				_, err = cl.Call(context.Background(), "x", nil, 0)
			}
			assert.ErrorIs(t, err, ErrProtocol)
		})
	}
}

// A sync call that outlives its timeout closes the connection, so the
// callee sees its peer go (and cancels its handler) instead of working on
// for nobody as upstream's leaked worker thread did.
func TestClientTimeoutClosesTheConnection(t *testing.T) {
	closed := make(chan struct{})
	name := rawServer(t, func(c net.Conn) {
		readReq(t, c)
		var b [1]byte
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		_, err := c.Read(b[:])
		if errors.Is(err, io.EOF) {
			close(closed)
		}
	})
	cl := &Client{Socket: name, UID: os.Getuid()}
	_, err := cl.Call(context.Background(), "slow", nil, 50*time.Millisecond)
	require.Error(t, err)
	assert.ErrorIs(t, err, Timeout)
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("the callee never saw the connection close")
	}
}

func TestClientDeadService(t *testing.T) {
	cl := &Client{Socket: fmt.Sprintf("@aci-wire-test-none-%d", os.Getpid()), UID: os.Getuid()}
	_, err := cl.Call(context.Background(), "x", nil, 0)
	assert.ErrorIs(t, err, ServiceUnavailable)

	name := rawServer(t, func(c net.Conn) { readReq(t, c) }) // closes without answering
	cl = &Client{Socket: name, UID: os.Getuid()}
	_, err = cl.Call(context.Background(), "x", nil, 0)
	assert.ErrorIs(t, err, ConnectionDied)
}
