//go:build linux

package adbd

import (
	"context"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentoslab/agentlab/devices/virtual/internal/proc"
)

// socketAddr maps an adb socket spec (tcp:PORT[:HOST], localabstract:NAME,
// localreserved:NAME, localfilesystem:PATH, local:PATH) to a Go network
// and address inside the device.
func socketAddr(spec string) (network, addr string, err error) {
	kind, rest, _ := strings.Cut(spec, ":")
	switch kind {
	case "tcp":
		port, host, _ := strings.Cut(rest, ":")
		if _, err := strconv.ParseUint(port, 10, 16); err != nil {
			return "", "", fmt.Errorf("bad tcp port in %q", spec)
		}
		if host == "" {
			host = "127.0.0.1"
		}
		return "tcp", net.JoinHostPort(host, port), nil
	case "localabstract":
		if rest == "" {
			return "", "", fmt.Errorf("empty socket name in %q", spec)
		}
		return "unix", "@" + rest, nil
	case "localreserved":
		if rest == "" || strings.Contains(rest, "/") {
			return "", "", fmt.Errorf("bad reserved socket name in %q", spec)
		}
		return "unix", "/dev/socket/" + rest, nil
	case "localfilesystem", "local":
		if rest == "" {
			return "", "", fmt.Errorf("empty socket path in %q", spec)
		}
		return "unix", rest, nil
	}
	return "", "", fmt.Errorf("unsupported socket spec %q", spec)
}

// dialSocket connects to a socket inside the device as adbd's current
// uid, so that a server checking SO_PEERCRED sees the shell user (2000),
// or root after adb root, as it would on a phone.
func (s *Server) dialSocket(spec string) (net.Conn, error) {
	network, addr, err := socketAddr(spec)
	if err != nil {
		return nil, err
	}
	uid := s.cfg.Hooks.UID()
	var nc net.Conn
	err = proc.RunAs(uid, uid, func() error {
		d := net.Dialer{Timeout: 5 * time.Second}
		var err error
		nc, err = d.Dial(network, addr)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("connect %s: %w", spec, err)
	}
	return nc, nil
}

// pump copies between an adb stream and a socket until either side ends;
// adb streams have no half-close, so the end of one closes both.
func pump(st *stream, sock net.Conn) {
	var once sync.Once
	stop := func() {
		once.Do(func() {
			sock.Close()
			st.Close()
		})
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		io.Copy(sock, st)
		stop()
	}()
	buf := make([]byte, 256<<10)
	io.CopyBuffer(st, sock, buf)
	stop()
	<-done
}

// reverse is a device-side listener of "adb reverse": each connection
// accepted inside the device becomes a stream the device opens towards the
// host's REMOTE.
type reverse struct {
	local, remote string
	ln            net.Listener
}

// reverse serves "reverse:" requests: forward:[norebind:]LOCAL;REMOTE,
// killforward:LOCAL, killforward-all and list-forward. Replies follow
// adbd: OKAY (+ hex4 port for tcp:0), or FAIL + hex4 message.
func (c *conn) reverse(st *stream, req string) {
	reply := func(ok bool, msg string) {
		b := []byte("OKAY")
		if !ok {
			b = []byte("FAIL")
		}
		if msg != "" || !ok {
			b = fmt.Appendf(b, "%04x%s", len(msg), msg)
		}
		st.Write(b)
	}
	switch {
	case req == "list-forward":
		c.mu.Lock()
		var sb strings.Builder
		for _, r := range c.reverses {
			fmt.Fprintf(&sb, "host-%d %s %s\n", c.id, r.local, r.remote)
		}
		c.mu.Unlock()
		// adbd sends the list without a status (the server sent the OKAY).
		st.Write(fmt.Appendf(nil, "%04x%s", sb.Len(), sb.String()))
	case req == "killforward-all":
		c.mu.Lock()
		revs := c.reverses
		c.reverses = map[string]*reverse{}
		c.mu.Unlock()
		for _, r := range revs {
			r.ln.Close()
		}
		reply(true, "")
	case strings.HasPrefix(req, "killforward:"):
		local := strings.TrimPrefix(req, "killforward:")
		c.mu.Lock()
		r := c.reverses[local]
		delete(c.reverses, local)
		c.mu.Unlock()
		if r == nil {
			reply(false, fmt.Sprintf("listener '%s' not found", local))
			return
		}
		r.ln.Close()
		reply(true, "")
	case strings.HasPrefix(req, "forward:"):
		spec := strings.TrimPrefix(req, "forward:")
		norebind := false
		if s, ok := strings.CutPrefix(spec, "norebind:"); ok {
			spec, norebind = s, true
		}
		local, remote, ok := strings.Cut(spec, ";")
		if !ok || local == "" || remote == "" {
			reply(false, "malformed forward spec")
			return
		}
		port, err := c.addReverse(local, remote, norebind)
		if err != nil {
			reply(false, err.Error())
			return
		}
		if strings.HasPrefix(local, "tcp:0") || local == "tcp:0" {
			// Resolved port first; the CLI prints it.
			st.Write(fmt.Appendf([]byte("OKAY"), "%04x%d", len(strconv.Itoa(port)), port))
			return
		}
		reply(true, "")
	default:
		reply(false, "unknown reverse request")
	}
}

// addReverse installs (or replaces) a reverse listener inside the device
// and returns its port for tcp specs.
func (c *conn) addReverse(local, remote string, norebind bool) (int, error) {
	network, addr, err := socketAddr(local)
	if err != nil {
		return 0, fmt.Errorf("cannot bind listener: %v", err)
	}
	c.mu.Lock()
	old := c.reverses[local]
	c.mu.Unlock()
	if old != nil {
		if norebind {
			return 0, fmt.Errorf("cannot rebind existing socket")
		}
		// Rebinding only changes where connections go.
		c.mu.Lock()
		old.remote = remote
		c.mu.Unlock()
		return listenerPort(old.ln), nil
	}
	ln, err := net.Listen(network, addr)
	if err != nil {
		return 0, fmt.Errorf("cannot bind listener: %v", err)
	}
	port := listenerPort(ln)
	key := local
	if network == "tcp" && strings.HasPrefix(local, "tcp:0") {
		key = "tcp:" + strconv.Itoa(port)
	}
	r := &reverse{local: key, remote: remote, ln: ln}
	c.mu.Lock()
	if c.ctx.Err() != nil || len(c.reverses) >= maxReverses {
		c.mu.Unlock()
		ln.Close()
		return 0, fmt.Errorf("cannot bind listener: connection closed or too many reverse forwards")
	}
	c.reverses[key] = r
	c.mu.Unlock()
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		c.acceptReverse(r)
	}()
	return port, nil
}

func listenerPort(ln net.Listener) int {
	if a, ok := ln.Addr().(*net.TCPAddr); ok {
		return a.Port
	}
	return 0
}

func (c *conn) acceptReverse(r *reverse) {
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		sock, err := r.ln.Accept()
		if err != nil {
			return
		}
		c.mu.Lock()
		remote := r.remote
		c.mu.Unlock()
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithCancel(c.ctx)
			defer cancel()
			st, err := c.openToHost(ctx, remote)
			if err != nil {
				c.s.log.Debug("reverse connection refused by host", "conn", c.id, "err", err)
				sock.Close()
				return
			}
			pump(st, sock)
		}()
	}
}
