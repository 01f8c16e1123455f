package transport

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"
)

// ErrServiceStarted is returned by Service.Start on a service that was
// started or closed before.
var ErrServiceStarted = errors.New("already started or closed")

// refuseWriteTimeout bounds the write of a refusal line: the peer may
// never read it.
const refuseWriteTimeout = 5 * time.Second

// Admission is a service's verdict on one accepted connection.
type Admission struct {
	// Serve serves an admitted connection on a goroutine of the service;
	// the service closes the connection when Serve returns. A nil Serve
	// refuses the connection.
	Serve func(ctx context.Context, c *Conn)
	// Reply is written to a refused connection (a JSON-RPC error line,
	// errcode.ErrorLine) before it is closed, from a goroutine of its own
	// and within a few seconds; nil closes it without a byte.
	Reply []byte
	// Done, when set, runs once the connection is finished, served or
	// refused (to give back a slot Admit took).
	Done func()
}

// Refuse is the Admission that refuses a connection, writing reply first
// when it is not nil.
func Refuse(reply []byte) Admission { return Admission{Reply: reply} }

// Admit decides each accepted connection before a byte is read from it
// or written to it, from the peer's credentials (Conn.Cred) and the
// server's own counts. It runs on the accept loop, one connection at a
// time in accept order — so counts it keeps cannot race with another
// admission — and must not block.
type Admit func(c *Conn) Admission

// Service is the one socket service of the runtime: every listener
// (desktop ACP and pairing, the caller channel, admin, the extension
// host's link, the launcher, a provider app's MCP server) runs on one.
// It listens on a name, accepts until its context ends or Stop, reads
// each peer's credentials, asks the server's Admit, serves each admitted
// connection on a goroutine of its own, keeps the open connections so
// that stopping closes every one, and waits for each goroutine it ran.
// Who is admitted and how a connection is served stay with the server.
// The zero value is ready to Start; a Service is started once.
type Service struct {
	mu      sync.Mutex
	ln      *Listener
	cancel  context.CancelFunc
	stopped bool
	conns   map[net.Conn]struct{}
	err     error // why accepting stopped, other than Stop; guarded by mu
	wg      sync.WaitGroup
}

// Start listens on name and serves it: each accepted connection is
// decided by admit. When ctx ends the service stops as Stop does.
func (s *Service) Start(ctx context.Context, name string, admit Admit) error {
	ln, err := Listen(name)
	if err != nil {
		return err
	}
	if err := s.Serve(ctx, ln, admit); err != nil {
		return fmt.Errorf("listen %s: %w", name, err)
	}
	return nil
}

// Serve is Start on a listener already open (a socket the caller must
// hold before it is served). The service owns ln from then on, also when
// Serve fails.
func (s *Service) Serve(ctx context.Context, ln *Listener, admit Admit) error {
	s.mu.Lock()
	if s.stopped || s.ln != nil {
		s.mu.Unlock()
		ln.Close()
		return ErrServiceStarted
	}
	ctx, cancel := context.WithCancel(ctx)
	s.ln, s.cancel = ln, cancel
	s.mu.Unlock()
	s.Go(func() {
		<-ctx.Done()
		s.Stop()
	})
	s.Go(func() { s.accept(ctx, ln, admit) })
	return nil
}

func (s *Service) accept(ctx context.Context, ln *Listener, admit Admit) {
	for {
		c, err := ln.Accept()
		if err != nil {
			if ctx.Err() == nil && !errors.Is(err, net.ErrClosed) {
				s.mu.Lock()
				s.err = err
				s.mu.Unlock()
			}
			s.Stop()
			return
		}
		a := admit(c)
		if a.Serve == nil {
			s.refuse(c, a)
			continue
		}
		if !s.track(c) {
			c.Close()
			a.finish()
			return
		}
		s.Go(func() {
			defer a.finish()
			defer s.untrack(c)
			a.Serve(ctx, c)
		})
	}
}

func (a Admission) finish() {
	if a.Done != nil {
		a.Done()
	}
}

// refuse closes c, after writing a's reply from a goroutine (a peer that
// does not read must not stall the accept loop).
func (s *Service) refuse(c *Conn, a Admission) {
	if a.Reply == nil {
		c.Close()
		a.finish()
		return
	}
	s.Go(func() {
		defer a.finish()
		c.SetWriteDeadline(time.Now().Add(refuseWriteTimeout))
		c.Write(a.Reply)
		c.Close()
	})
}

// track adds c to the open connections, which Stop closes. It reports
// false, and leaves c out, once the service stopped.
func (s *Service) track(c net.Conn) bool {
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

// untrack closes c and removes it from the open connections.
func (s *Service) untrack(c net.Conn) {
	c.Close()
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.conns, c)
}

// Open is the number of connections being served. Admit may read it: only
// the accept loop adds to it.
func (s *Service) Open() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}

// Go runs fn in a goroutine that Close and Wait wait for.
func (s *Service) Go(fn func()) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		fn()
	}()
}

// Stop ends the context the connections are served with, and closes the
// listener and every open connection; no connection is served after it.
// It does not wait (Close does).
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

// Wait waits until the service has stopped — its context ended, Stop, or
// accepting failed — and every goroutine it ran has returned. It returns
// the accept failure that stopped it, or nil.
func (s *Service) Wait() error {
	s.wg.Wait()
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}
