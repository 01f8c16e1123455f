package admin

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net"
	"testing"
	"time"

	"github.com/agentoslab/agentlab/runtime/errcode"
	"github.com/agentoslab/agentlab/runtime/transport"
)

// FuzzRequest: any line gets exactly one well-formed response, never a
// panic, and an error carries the errcode wire shape. The line goes
// through the server's real connection handling (the RPC peer in
// requests-only mode) over an in-memory pipe.
func FuzzRequest(f *testing.F) {
	for _, s := range []string{
		`{"id":1,"method":"echo","params":{"text":"x"}}`, `{"id":"a","method":"nope"}`, `{"id":{},"method":"echo"}`,
		`{"id":2,"method":"echo","params":[1]}`, `[]`, `null`, `{"id":3}`, `{"id":4,"method":"fail.panic"}`,
		`{"id":1e400,"method":"echo"}`, `{"id":5,"method":"echo","params":{"text":"\ud800"}}`, `{"method":"echo"}`,
	} {
		f.Add([]byte(s))
	}
	s := NewServer(&Options{Methods: testMethods(), RuntimeUID: 10099})
	f.Fuzz(func(t *testing.T, line []byte) {
		if bytes.ContainsAny(line, "\r\n") || len(bytes.TrimSpace(line)) == 0 || len(line) > MaxRequestChars {
			t.Skip("one non-empty line per case")
		}
		client, server := net.Pipe()
		defer client.Close()
		done := make(chan struct{})
		go func() {
			defer close(done)
			s.servePipe(server, Root)
		}()
		client.SetDeadline(time.Now().Add(10 * time.Second))
		go client.Write(append(append([]byte(nil), line...), '\n'))
		b, err := bufio.NewReader(client).ReadBytes('\n')
		if err != nil {
			t.Fatalf("no response: %v", err)
		}
		client.Close()
		<-done
		var resp struct {
			ID     json.RawMessage    `json:"id"`
			Result json.RawMessage    `json:"result"`
			Error  *errcode.WireError `json:"error"`
		}
		if err := json.Unmarshal(b, &resp); err != nil {
			t.Fatalf("response %q is not JSON: %v", b, err)
		}
		if !json.Valid(resp.ID) {
			t.Fatalf("id %q is not JSON", resp.ID)
		}
		if (resp.Error == nil) == (resp.Result == nil) {
			t.Fatalf("want exactly one of result and error: %s", b)
		}
		if resp.Error != nil && (resp.Error.Data.AgentosCode == "" || resp.Error.Message == "") {
			t.Fatalf("error without code or message: %s", b)
		}
	})
}

// servePipe serves one in-memory connection as a root peer.
func (s *Server) servePipe(c net.Conn, class Perm) {
	s.serveStream(context.Background(), c, transport.Cred{UID: RootUID}, class)
}
