package transport

import (
	"context"
	"errors"
	"io"
	"net"
	"testing"
)

// echoService starts a Service whose accept loop tracks every connection
// and serves it by echoing, and returns it with its socket name.
func echoService(t *testing.T, ctx context.Context) (*Service, string) {
	t.Helper()
	var s Service
	name := uniqueName(t)
	err := s.Start(ctx, name, func(ctx context.Context, ln *Listener) {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			if !s.Track(c) {
				c.Close()
				return
			}
			s.Go(func() {
				defer s.Untrack(c)
				io.Copy(c, c)
			})
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	return &s, name
}

// roundTrip dials name and proves a byte comes back.
func roundTrip(t *testing.T, name string) net.Conn {
	t.Helper()
	c, err := Dial(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write([]byte{'x'}); err != nil {
		t.Fatal(err)
	}
	var b [1]byte
	if _, err := io.ReadFull(c, b[:]); err != nil {
		t.Fatalf("echo: %v", err)
	}
	return c
}

// TestServiceCloseEndsEverything: Close closes the listener and every
// open connection and waits for the handlers; a closed service neither
// starts again nor tracks connections.
func TestServiceCloseEndsEverything(t *testing.T) {
	s, name := echoService(t, context.Background())
	c := roundTrip(t, name)
	defer c.Close()
	if n := s.Open(); n != 1 {
		t.Fatalf("%d open connections, want 1", n)
	}
	s.Close()
	var b [1]byte
	if _, err := c.Read(b[:]); err == nil {
		t.Error("an open connection survived Close")
	}
	if n := s.Open(); n != 0 {
		t.Errorf("%d connections tracked after Close (the handler's Untrack ran)", n)
	}
	if _, err := Dial(context.Background(), name); err == nil {
		t.Error("the socket still accepts after Close")
	}
	a, b2 := net.Pipe()
	defer a.Close()
	defer b2.Close()
	if s.Track(a) {
		t.Error("Track after Close accepted a connection")
	}
	err := s.Start(context.Background(), uniqueName(t)+"-again", func(context.Context, *Listener) {})
	if !errors.Is(err, ErrServiceStarted) {
		t.Errorf("Start after Close: %v, want ErrServiceStarted", err)
	}
}

// TestServiceStopsWithItsContext: ending the context given to Start
// stops the service as Stop does.
func TestServiceStopsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	s, name := echoService(t, ctx)
	c := roundTrip(t, name)
	defer c.Close()
	cancel()
	var b [1]byte
	if _, err := c.Read(b[:]); err == nil {
		t.Error("the connection survived the context")
	}
	s.Close() // waits for the handlers and the accept loop
	if _, err := Dial(context.Background(), name); err == nil {
		t.Error("the socket still accepts after its context ended")
	}
}

// TestServiceStartsOnce: a second Start is refused and leaves the first
// listener serving.
func TestServiceStartsOnce(t *testing.T) {
	s, name := echoService(t, context.Background())
	defer s.Close()
	err := s.Start(context.Background(), uniqueName(t)+"-second", func(context.Context, *Listener) {})
	if !errors.Is(err, ErrServiceStarted) {
		t.Fatalf("second Start: %v, want ErrServiceStarted", err)
	}
	roundTrip(t, name).Close()
}
