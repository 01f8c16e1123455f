package admin

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/agentoslab/agentlab/runtime/transport"
)

// FuzzRequest: any line gets exactly one well-formed response, never a
// panic, and an error carries the errcode wire shape.
func FuzzRequest(f *testing.F) {
	for _, s := range []string{
		`{"id":1,"method":"echo","params":{"text":"x"}}`, `{"id":"a","method":"nope"}`, `{"id":{},"method":"echo"}`,
		`{"id":2,"method":"echo","params":[1]}`, `[]`, `null`, `{"id":3}`, `{"id":4,"method":"fail.panic"}`,
		`{"id":1e400,"method":"echo"}`, `{"id":5,"method":"echo","params":{"text":"\ud800"}}`,
	} {
		f.Add([]byte(s))
	}
	s := NewServer(&Options{Methods: testMethods(), RuntimeUID: 10099})
	gone := make(chan struct{})
	f.Fuzz(func(t *testing.T, line []byte) {
		resp := s.handle(context.Background(), gone, transport.Cred{UID: 0}, Root, line)
		if !json.Valid(resp.ID) {
			t.Fatalf("id %q is not JSON", resp.ID)
		}
		if (resp.Error == nil) == (resp.Result == nil) {
			t.Fatalf("want exactly one of result and error: %+v", resp)
		}
		if resp.Error != nil && (resp.Error.Data.AgentosCode == "" || resp.Error.Message == "") {
			t.Fatalf("error without code or message: %+v", resp.Error)
		}
		if _, err := json.Marshal(resp); err != nil {
			t.Fatalf("response not encodable: %v", err)
		}
	})
}
