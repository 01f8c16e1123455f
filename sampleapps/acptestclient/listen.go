package acptestclient

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/agentoslab/agentlab/runtime/transport"
)

// ListenOut is listen's result: what reached a socket this app squatted.
type ListenOut struct {
	// Listening: the socket was free and this app held it.
	Listening bool `json:"listening"`
	// InUse: someone else already held it.
	InUse bool `json:"inUse"`
	// Accepted counts connections; BytesRead what they sent in all. A
	// peer that checks who listens before talking (dial, read the
	// credentials, close) is a connection with no bytes.
	Accepted  int `json:"accepted"`
	BytesRead int `json:"bytesRead"`
	Outcome
}

// listenReadWait bounds how long one connection is read: a peer that
// talks sends its first line at once.
const listenReadWait = 2 * time.Second

// listen holds op's socket for op.Ms, counting what connects and what it
// sends (each connection is read up to its first line, then closed).
// With op.ReadMs it ends that long after its last connection closed, so
// a scenario need not wait the whole span once the peer has been.
func (r *runner) listen(ctx context.Context, op *Op) (any, error) {
	out := &ListenOut{}
	ln, err := transport.Listen(r.socketName(op.Socket))
	if errors.Is(err, transport.ErrInUse) {
		out.InUse = true
		return out, nil
	}
	if err != nil {
		return nil, err
	}
	out.Listening = true
	span, cancel := context.WithTimeout(ctx, time.Duration(op.Ms)*time.Millisecond)
	defer cancel()
	stop := context.AfterFunc(span, func() { ln.Close() })
	defer stop()

	var mu sync.Mutex
	var quiet *time.Timer
	var wg sync.WaitGroup
	for {
		c, err := ln.Accept()
		if err != nil {
			break
		}
		mu.Lock()
		out.Accepted++
		if quiet != nil {
			quiet.Stop()
		}
		mu.Unlock()
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer c.Close()
			c.SetReadDeadline(time.Now().Add(listenReadWait))
			read := readFirstLine(c)
			mu.Lock()
			defer mu.Unlock()
			out.BytesRead += read
			if op.ReadMs > 0 {
				if quiet != nil {
					quiet.Stop()
				}
				quiet = time.AfterFunc(time.Duration(op.ReadMs)*time.Millisecond, cancel)
			}
		}()
	}
	ln.Close()
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	if quiet != nil {
		quiet.Stop()
	}
	return out, nil
}

// appSocket is the socket of a provider app's server named app:PKG/SERVER,
// or of a controlled app's ACI service named aci:PKG/SERVER, with the
// runtime's prefix (read off the caller socket's name), or "".
func (r *runner) appSocket(s string) string {
	const callerBase = "agentos-caller"
	kind, ref, ok := strings.Cut(s, ":")
	if !ok || kind != "app" && kind != "aci" {
		return ""
	}
	pkg, server, ok := strings.Cut(ref, "/")
	if !ok {
		return ""
	}
	base := r.env.CallerSocket
	if i := strings.LastIndex(base, callerBase); i >= 0 {
		if kind == "aci" {
			return base[:i] + "aci." + pkg + "." + server + base[i+len(callerBase):]
		}
		return base[:i] + "agentos-app." + pkg + "." + server + base[i+len(callerBase):]
	}
	if kind == "aci" {
		return transport.Names{}.ACI(pkg, server)
	}
	return transport.Names{}.App(pkg, server)
}

// readFirstLine reads c up to its first newline, its end or its
// deadline, and returns how many bytes came before the newline. Bytes of
// a peer that never sends a newline (an ACI frame) count too.
func readFirstLine(c io.Reader) int {
	n := 0
	buf := make([]byte, 4096)
	for {
		k, err := c.Read(buf)
		if i := bytes.IndexByte(buf[:k], '\n'); i >= 0 {
			return n + i
		}
		n += k
		if err != nil {
			return n
		}
	}
}
