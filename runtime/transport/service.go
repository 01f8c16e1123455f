package transport

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
)

// ErrServiceStarted is returned by Service.Start on a service that was
// started or closed before.
var ErrServiceStarted = errors.New("already started or closed")

// Service is the life of a socket server, shared by the runtime's
// servers: it listens on a name, runs the server's accept loop until its
// context ends or Close, keeps the set of open connections so that
// stopping closes every one, and waits for each goroutine it ran. Who is
// admitted and how a connection is served stay with the server. The zero
// value is ready to Start; a Service is started once.
type Service struct {
	mu      sync.Mutex
	ln      *Listener
	cancel  context.CancelFunc
	stopped bool
	conns   map[net.Conn]struct{}
	wg      sync.WaitGroup
}

// Start listens on name and runs accept(ctx, ln) in a goroutine of its
// own. When ctx ends the service stops as Stop does, so accept's
// ln.Accept fails and it returns.
func (s *Service) Start(ctx context.Context, name string, accept func(ctx context.Context, ln *Listener)) error {
	ln, err := Listen(name)
	if err != nil {
		return err
	}
	s.mu.Lock()
	if s.stopped || s.ln != nil {
		s.mu.Unlock()
		ln.Close()
		return fmt.Errorf("listen %s: %w", name, ErrServiceStarted)
	}
	ctx, cancel := context.WithCancel(ctx)
	s.ln, s.cancel = ln, cancel
	s.mu.Unlock()
	s.Go(func() {
		<-ctx.Done()
		s.Stop()
	})
	s.Go(func() { accept(ctx, ln) })
	return nil
}

// Track adds c to the open connections, which Stop closes. It reports
// false, and leaves c out, once the service stopped: the caller closes c.
func (s *Service) Track(c net.Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return false
	}
	if s.conns == nil {
		s.conns = map[net.Conn]struct{}{}
	}
	s.conns[c] = struct{}{}
	return true
}

// Untrack closes c and removes it from the open connections.
func (s *Service) Untrack(c net.Conn) {
	c.Close()
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.conns, c)
}

// Open is the number of open (tracked) connections.
func (s *Service) Open() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}

// Go runs fn in a goroutine that Close waits for.
func (s *Service) Go(fn func()) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		fn()
	}()
}

// Stop ends the context the accept loop got, and closes the listener
// and every open connection; no connection is tracked after it. It does
// not wait (Close does).
func (s *Service) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopped = true
	if s.cancel != nil {
		s.cancel()
	}
	if s.ln != nil {
		s.ln.Close()
	}
	for c := range s.conns {
		c.Close()
	}
}

// Close stops the service and waits for every goroutine it ran.
func (s *Service) Close() {
	s.Stop()
	s.wg.Wait()
}
