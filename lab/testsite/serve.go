package testsite

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"
)

// DeviceHost is the name the lab publishes the site under on its virtual
// devices (on other devices it is 127.0.0.1), and DevicePort the device
// port adb reverse maps to the site: fixed, so that scenarios can name
// the site's pages (http://site.agentlab.test:8780/page/a).
const (
	DeviceHost = "site.agentlab.test"
	DevicePort = 8780
)

// Server is the site served on a TCP address of the lab host.
type Server struct {
	ln   net.Listener
	srv  *http.Server
	done chan error
}

// Start serves the site on addr ("127.0.0.1:0" picks a port); a device
// reaches it through adb reverse to Port.
func Start(addr string) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("testsite: %w", err)
	}
	s := &Server{ln: ln, done: make(chan error, 1),
		srv: &http.Server{Handler: Handler(), ReadHeaderTimeout: 10 * time.Second}}
	go func() { s.done <- s.srv.Serve(ln) }()
	return s, nil
}

// URL is the site's base URL on the host.
func (s *Server) URL() string { return "http://" + s.ln.Addr().String() }

// Port is the TCP port it listens on.
func (s *Server) Port() int { return s.ln.Addr().(*net.TCPAddr).Port }

// Close stops the site, ending open requests (slow pages included).
func (s *Server) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	err := s.srv.Shutdown(ctx)
	if errors.Is(err, context.DeadlineExceeded) {
		err = s.srv.Close()
	}
	if serr := <-s.done; !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = serr
	}
	return err
}
