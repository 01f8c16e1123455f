package transport

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"
)

// pipePair returns the stream side and the peer side of an in-memory
// full-duplex connection.
func pipePair(t *testing.T) (net.Conn, net.Conn) {
	t.Helper()
	a, b := net.Pipe()
	t.Cleanup(func() { a.Close(); b.Close() })
	return a, b
}

func TestRPCStreamAnswersBadLinesItself(t *testing.T) {
	srv, peer := pipePair(t)
	s := NewRPCStream(srv, nil)
	defer s.Close()

	engine := bufio.NewReader(s.Reader())
	replies := bufio.NewReader(peer)

	tests := []struct {
		send string
		want string // reply the peer must get; "" = forwarded to the engine
	}{
		{`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`, ""},
		{`{not json`, `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}`},
		{`[1,2]`, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid request"}}`},
		{`"hello"`, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid request"}}`},
		{`{"jsonrpc":"1.0","id":7,"method":"x"}`, `{"jsonrpc":"2.0","id":7,"error":{"code":-32600,"message":"Invalid request"}}`},
		{`{"jsonrpc":"2.0","id":"a","method":42}`, `{"jsonrpc":"2.0","id":"a","error":{"code":-32600,"message":"Invalid request"}}`},
		{`{"jsonrpc":"2.0","id":{"x":1},"method":"m"}`, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid request"}}`},
		{`{"jsonrpc":"2.0","method":"session/cancel","params":{}}`, ""},
	}
	for _, tt := range tests {
		go func() { io.WriteString(peer, tt.send+"\n") }()
		if tt.want == "" {
			got, err := engine.ReadString('\n')
			if err != nil || strings.TrimSpace(got) != tt.send {
				t.Fatalf("engine got %q, %v; want %q", got, err, tt.send)
			}
			continue
		}
		got, err := replies.ReadString('\n')
		if err != nil || strings.TrimSpace(got) != tt.want {
			t.Fatalf("for %s the peer got %q, %v; want %q", tt.send, got, err, tt.want)
		}
		if !json.Valid([]byte(got)) {
			t.Fatalf("reply is not JSON: %q", got)
		}
	}
}

func TestRPCStreamOversizeClosesOnlyThatConnection(t *testing.T) {
	srvA, peerA := pipePair(t)
	srvB, peerB := pipePair(t)
	a := NewRPCStream(srvA, &RPCOptions{MaxLineChars: 64})
	b := NewRPCStream(srvB, &RPCOptions{MaxLineChars: 64})
	defer a.Close()
	defer b.Close()

	go func() {
		io.WriteString(peerA, `{"jsonrpc":"2.0","method":"x","params":"`+strings.Repeat("z", 100)+`"}`+"\n")
	}()
	// The engine reading A sees EOF; the stream reports why.
	if _, err := io.ReadAll(a.Reader()); err != nil {
		t.Fatalf("engine read error %v", err)
	}
	<-a.Done()
	if !errors.Is(a.Err(), ErrLineTooLong) {
		t.Fatalf("Err = %v", a.Err())
	}
	// The peer's side is closed too.
	if _, err := peerA.Read(make([]byte, 1)); err == nil {
		t.Fatal("peer A still open")
	}
	// B still works.
	go io.WriteString(peerB, `{"jsonrpc":"2.0","method":"y"}`+"\n")
	line, err := bufio.NewReader(b.Reader()).ReadString('\n')
	if err != nil || !strings.Contains(line, `"y"`) {
		t.Fatalf("B broken: %q %v", line, err)
	}
}

func TestRPCStreamWritesAreWhole(t *testing.T) {
	srv, peer := pipePair(t)
	s := NewRPCStream(srv, nil)
	defer s.Close()
	w := s.Writer()
	const n = 50
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			msg := `{"jsonrpc":"2.0","method":"m","params":"` + strings.Repeat(string(rune('a'+i%26)), 3000) + `"}` + "\n"
			w.Write([]byte(msg))
		}(i)
	}
	// Bad lines make the stream write its own replies concurrently.
	go func() {
		for i := 0; i < n; i++ {
			io.WriteString(peer, "garbage\n")
		}
	}()
	r := bufio.NewReaderSize(peer, 1<<16)
	for i := 0; i < 2*n; i++ {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if !json.Valid([]byte(line)) {
			t.Fatalf("interleaved write: %.80q", line)
		}
	}
	wg.Wait()
}

func TestRPCStreamPeerCloseEndsReader(t *testing.T) {
	srv, peer := pipePair(t)
	s := NewRPCStream(srv, nil)
	peer.Close()
	done := make(chan error, 1)
	go func() { _, err := io.ReadAll(s.Reader()); done <- err }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("reader did not end after the peer closed")
	}
	if s.Err() != nil {
		t.Fatalf("clean close reported %v", s.Err())
	}
}

func FuzzRPCCheck(f *testing.F) {
	for _, s := range []string{`{"jsonrpc":"2.0","id":1,"method":"a"}`, `{`, `[]`, `{"jsonrpc":"2.0","id":[],"method":"a"}`, `null`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		reply := check(line)
		if reply == nil {
			var m map[string]json.RawMessage
			if err := json.Unmarshal(line, &m); err != nil {
				t.Fatalf("forwarded a non-object: %q", line)
			}
			return
		}
		var r struct {
			JSONRPC string `json:"jsonrpc"`
			Error   struct {
				Code int `json:"code"`
			} `json:"error"`
		}
		if err := json.Unmarshal(reply, &r); err != nil || r.JSONRPC != "2.0" || (r.Error.Code != -32700 && r.Error.Code != -32600) {
			t.Fatalf("bad reply %q for %q", reply, line)
		}
	})
}

// An outbound message the peer could not read (it would have to close
// the connection) is never sent: a request is answered locally, a
// response becomes an error with its id, a notification is dropped,
// counted and replaced by a short notice. The connection stays usable.
func TestRPCStreamOutboundOversize(t *testing.T) {
	big := strings.Repeat("x", 200)
	notification := `{"jsonrpc":"2.0","method":"session/update","params":"` + big + `"}`
	response := `{"jsonrpc":"2.0","id":7,"result":"` + big + `"}`
	request := `{"jsonrpc":"2.0","id":"r1","method":"fs/read","params":"` + big + `"}`
	tests := []struct {
		name     string
		msg      string
		toPeer   string // what the peer reads instead ("" = nothing)
		toEngine string // what the local engine reads ("" = nothing)
		dropped  int64
	}{
		{name: "notification", msg: notification,
			toPeer: fmt.Sprintf(`{"jsonrpc":"2.0","method":"_org.agentos/dropped","params":{"chars":%d,"limit":64,"method":"session/update"}}`,
				len(notification)),
			dropped: 1},
		{name: "response", msg: response,
			toPeer: fmt.Sprintf(`{"jsonrpc":"2.0","id":7,"error":{"code":-32603,"message":"acp-line: message of %d chars exceeds 64"}}`,
				len(response))},
		{name: "request", msg: request,
			toEngine: fmt.Sprintf(`{"jsonrpc":"2.0","id":"r1","error":{"code":-32603,"message":"acp-line: message of %d chars exceeds 64"}}`,
				len(request))},
		{name: "fits", msg: `{"jsonrpc":"2.0","method":"m"}`, toPeer: `{"jsonrpc":"2.0","method":"m"}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv, peer := pipePair(t)
			s := NewRPCStream(srv, &RPCOptions{MaxLineChars: 64})
			defer s.Close()
			engine := bufio.NewReader(s.Reader())
			got := make(chan string, 1)
			go func() {
				line, _ := bufio.NewReader(peer).ReadString('\n')
				got <- strings.TrimSpace(line)
			}()
			engineGot := make(chan string, 1)
			if tc.toEngine != "" {
				go func() {
					line, _ := engine.ReadString('\n')
					engineGot <- strings.TrimSpace(line)
				}()
			}
			n, err := s.Writer().Write([]byte(tc.msg + "\n"))
			if err != nil || n != len(tc.msg)+1 {
				t.Fatalf("Write = %d, %v", n, err)
			}
			if tc.toEngine != "" {
				if line := <-engineGot; line != tc.toEngine {
					t.Fatalf("engine read %s\nwant %s", line, tc.toEngine)
				}
			}
			if tc.toPeer != "" {
				if line := <-got; line != tc.toPeer {
					t.Fatalf("peer read %s\nwant %s", line, tc.toPeer)
				}
			}
			if s.Dropped() != tc.dropped {
				t.Fatalf("Dropped = %d, want %d", s.Dropped(), tc.dropped)
			}
			// Still open both ways.
			go io.WriteString(peer, `{"jsonrpc":"2.0","method":"after"}`+"\n")
			if line, err := engine.ReadString('\n'); err != nil || !strings.Contains(line, "after") {
				t.Fatalf("connection broken after oversize: %q %v", line, err)
			}
		})
	}
}
