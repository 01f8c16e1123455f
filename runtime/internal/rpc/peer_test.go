package rpc

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/agentoslab/agentlab/runtime/errcode"
)

func pair(t *testing.T, ha, hb Handler, na, nb Notify) (*Peer, *Peer) {
	t.Helper()
	dir := t.TempDir()
	ln, err := net.Listen("unix", dir+"/l")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	ch := make(chan net.Conn, 1)
	go func() { c, _ := ln.Accept(); ch <- c }()
	ca, err := net.Dial("unix", dir+"/l")
	if err != nil {
		t.Fatal(err)
	}
	cb := <-ch
	a, b := New(ca, &Options{Handler: ha, Notify: na}), New(cb, &Options{Handler: hb, Notify: nb})
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); a.Run(ctx) }()
	go func() { defer wg.Done(); b.Run(ctx) }()
	t.Cleanup(func() { cancel(); wg.Wait() })
	return a, b
}

func TestCallNotifyAndErrors(t *testing.T) {
	t.Parallel()
	notes := make(chan string, 10)
	handler := func(ctx context.Context, method string, params json.RawMessage) (any, error) {
		switch method {
		case "echo":
			return params, nil
		case "fail":
			return nil, errcode.New(errcode.InvalidState, "not now").WithDetails(map[string]any{"reason": "not_ready"})
		case "bug":
			return nil, errors.New("secret internals")
		case "panic":
			panic("boom")
		}
		return nil, errcode.New(errcode.Unsupported, "no")
	}
	a, b := pair(t, nil, handler, func(m string, p json.RawMessage) { notes <- m + string(p) }, nil)
	ctx := context.Background()
	var out map[string]int
	if err := a.Call(ctx, "echo", map[string]int{"x": 1}, &out); err != nil || out["x"] != 1 {
		t.Fatalf("echo = %v, %v", out, err)
	}
	err := a.Call(ctx, "fail", nil, nil)
	var e *errcode.Error
	if !errors.As(err, &e) || e.Code != errcode.InvalidState || e.Text != "not now" || e.Details["reason"] != "not_ready" {
		t.Fatalf("fail = %#v", err)
	}
	if err := a.Call(ctx, "bug", nil, nil); !errors.As(err, &e) || e.Code != errcode.Internal || e.Text == "secret internals" {
		t.Fatalf("bug = %v", err)
	}
	if err := a.Call(ctx, "panic", nil, nil); !errors.As(err, &e) || e.Code != errcode.Internal {
		t.Fatalf("panic = %v", err)
	}
	// a serves no requests.
	if err := b.Call(ctx, "echo", 1, nil); !errors.As(err, &e) || e.Code != errcode.Unsupported {
		t.Fatalf("call to a = %v", err)
	}
	for i := range 3 {
		if err := b.Notify("n", i); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 3 {
		if got := <-notes; got != "n"+string(rune('0'+i)) {
			t.Fatalf("notification %d = %q", i, got)
		}
	}
}

func TestCancelAndGrace(t *testing.T) {
	t.Parallel()
	started := make(chan struct{}, 1)
	release := make(chan struct{})
	handler := func(ctx context.Context, method string, _ json.RawMessage) (any, error) {
		started <- struct{}{}
		<-ctx.Done()
		if method == "answer" {
			return "cancelled cleanly", nil
		}
		<-release // answers only when the test ends
		return nil, nil
	}
	a, _ := pair(t, nil, handler, nil, nil)
	t.Cleanup(func() { close(release) })
	ctx, cancel := context.WithCancel(context.Background())
	var res string
	errc := make(chan error, 1)
	go func() { errc <- a.CallGrace(ctx, 10*time.Second, "answer", nil, &res) }()
	<-started
	cancel()
	if err := <-errc; err != nil || res != "cancelled cleanly" {
		t.Fatalf("CallGrace = %q, %v", res, err)
	}
	ctx2, cancel2 := context.WithCancel(context.Background())
	go func() { errc <- a.CallGrace(ctx2, 50*time.Millisecond, "hang", nil, nil) }()
	<-started
	cancel2()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("hang = %v", err)
	}
}

func TestCloseFailsCallsInFlight(t *testing.T) {
	t.Parallel()
	started := make(chan struct{})
	handler := func(ctx context.Context, _ string, _ json.RawMessage) (any, error) {
		close(started)
		<-ctx.Done()
		return nil, ctx.Err()
	}
	a, b := pair(t, nil, handler, nil, nil)
	errc := make(chan error, 1)
	go func() { errc <- a.Call(context.Background(), "x", nil, nil) }()
	<-started
	b.Close()
	if err := <-errc; !errors.Is(err, ErrClosed) {
		t.Fatalf("call after peer closed = %v", err)
	}
	select {
	case <-a.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("a did not notice the close")
	}
	if err := a.Call(context.Background(), "x", nil, nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("call on closed peer = %v", err)
	}
}

// TestRefusalOfTheConnection: an error response with id null is the other
// end refusing the connection (admin's busy): the call in flight and
// every later call fail with it, not with a bare ErrClosed.
func TestRefusalOfTheConnection(t *testing.T) {
	dir := t.TempDir()
	ln, err := net.Listen("unix", dir+"/l")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		c.Write(errcode.ErrorLine(nil, errcode.New(errcode.Busy, "too many").Wire()))
		c.Close()
	}()
	c, err := net.Dial("unix", dir+"/l")
	if err != nil {
		t.Fatal(err)
	}
	p := New(c, nil)
	done := make(chan struct{})
	go func() { defer close(done); p.Run(context.Background()) }()
	for i := range 2 {
		err := p.Call(context.Background(), "x", nil, nil)
		if !errors.Is(err, errcode.Busy) {
			t.Fatalf("call %d: %v, want busy", i, err)
		}
	}
	<-done
}
