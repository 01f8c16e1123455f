package transport

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// echo admits every connection and serves it by echoing.
func echo(*Conn) Admission {
	return Admission{Serve: func(_ context.Context, c *Conn) { io.Copy(c, c) }}
}

// echoService starts a Service that echoes on every connection, and
// returns it with its socket name.
func echoService(t *testing.T, ctx context.Context) (*Service, string) {
	t.Helper()
	var s Service
	name := uniqueName(t)
	err := s.Start(ctx, name, echo)
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
	if s.track(a) {
		t.Error("track after Close accepted a connection")
	}
	err := s.Start(context.Background(), uniqueName(t)+"-again", echo)
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
	err := s.Start(context.Background(), uniqueName(t)+"-second", echo)
	if !errors.Is(err, ErrServiceStarted) {
		t.Fatalf("second Start: %v, want ErrServiceStarted", err)
	}
	roundTrip(t, name).Close()
}

// TestServiceAdmission: Admit sees the kernel's credentials before a
// byte; a refusal with a reply gets exactly that line and then EOF, one
// without gets EOF at once; Done runs once for every connection, served
// or refused, so a slot Admit took is always given back.
func TestServiceAdmission(t *testing.T) {
	var s Service
	name := uniqueName(t)
	var mu sync.Mutex
	done := map[string]int{}
	var seen []Cred
	verdicts := make(chan Admission, 3)
	err := s.Start(context.Background(), name, func(c *Conn) Admission {
		mu.Lock()
		seen = append(seen, c.Cred())
		mu.Unlock()
		a := <-verdicts
		return a
	})
	require.NoError(t, err)
	defer s.Close()
	mark := func(what string) func() {
		return func() { mu.Lock(); done[what]++; mu.Unlock() }
	}
	dialRead := func(send bool) string {
		c, err := Dial(context.Background(), name)
		require.NoError(t, err)
		defer c.Close()
		if send {
			c.Write([]byte("ping"))
			c.(*net.UnixConn).CloseWrite()
		}
		b, _ := io.ReadAll(c)
		return string(b)
	}

	verdicts <- Admission{Reply: []byte("busy\n"), Done: mark("busy")}
	assert.Equal(t, "busy\n", dialRead(false), "a refusal's reply, then EOF")
	verdicts <- Admission{Done: mark("silent")}
	assert.Equal(t, "", dialRead(false), "a silent refusal: EOF without a byte")
	verdicts <- Admission{Serve: func(_ context.Context, c *Conn) { io.Copy(c, c) }, Done: mark("served")}
	assert.Equal(t, "ping", dialRead(true), "an admitted connection is served")

	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return done["busy"] == 1 && done["silent"] == 1 && done["served"] == 1
	}, 5*time.Second, time.Millisecond, "Done once per connection")
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, seen, 3)
	for _, c := range seen {
		assert.Equal(t, Cred{UID: os.Getuid(), GID: os.Getgid(), PID: os.Getpid()}, c, "the kernel's identity of the dialer")
	}
}

// TestServiceServeAndWait: Serve takes a listener opened beforehand, and
// Wait returns once the context ended and every handler returned (the
// plugin SDK's ServeListener blocks on it).
func TestServiceServeAndWait(t *testing.T) {
	ln, err := Listen(uniqueName(t))
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	var s Service
	served := make(chan struct{})
	require.NoError(t, s.Serve(ctx, ln, func(*Conn) Admission {
		return Admission{Serve: func(ctx context.Context, c *Conn) { close(served); <-ctx.Done() }}
	}))
	c, err := Dial(context.Background(), ln.Name())
	require.NoError(t, err)
	defer c.Close()
	<-served
	waited := make(chan error, 1)
	go func() { waited <- s.Wait() }()
	select {
	case <-waited:
		t.Fatal("Wait returned while serving")
	case <-time.After(20 * time.Millisecond):
	}
	cancel()
	select {
	case err := <-waited:
		assert.NoError(t, err, "stopped by its context: no accept failure")
	case <-time.After(5 * time.Second):
		t.Fatal("Wait did not return after the context ended")
	}
}
