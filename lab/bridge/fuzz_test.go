package bridge

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"testing"
	"testing/iotest"
)

// FuzzReadLine: the handshake reader returns the first line and exactly
// the bytes after it, whatever the chunking, and never more than its bound.
func FuzzReadLine(f *testing.F) {
	f.Add([]byte("{\"result\":{}}\n{\"x\":1}\n"), uint8(3))
	f.Add([]byte("no newline"), uint8(1))
	f.Add([]byte("\n"), uint8(0))
	f.Fuzz(func(t *testing.T, data []byte, chunk uint8) {
		var r io.Reader = bytes.NewReader(data)
		if chunk%2 == 1 {
			r = iotest.HalfReader(r)
		}
		if chunk%3 == 0 {
			r = iotest.OneByteReader(r)
		}
		line, rest, err := readLine(r, 64)
		i := bytes.IndexByte(data, '\n')
		switch {
		case err == nil:
			if i < 0 || !bytes.Equal(line, data[:i]) || !bytes.HasPrefix(data[i+1:], rest) {
				t.Fatalf("line %q rest %q from %q", line, rest, data)
			}
		case errors.Is(err, errTooLong):
			if i >= 0 && i <= 64 {
				t.Fatalf("too long with a newline at %d", i)
			}
		case i >= 0 && i <= 64:
			t.Fatalf("error %v with a newline at %d", err, i)
		}
	})
}

func FuzzParseState(f *testing.F) {
	f.Add([]byte(`{"version":1,"devices":{"adb:x":{"token":"t","pairingId":"dp_1","label":"l","pairedAt":"2026-01-01T00:00:00Z"}}}`))
	f.Add([]byte(`{"version":2}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, data []byte) {
		st, err := ParseState(data)
		if err != nil {
			if !errors.Is(err, ErrBadState) {
				t.Fatalf("error %v does not wrap ErrBadState", err)
			}
			return
		}
		if st.Version != StateVersion || st.Devices == nil {
			t.Fatalf("accepted %+v", st)
		}
	})
}

// FuzzFromEditor: an editor line reaches the phone unchanged unless it is
// a session request with stdio servers; then it is one JSON line with the
// same id, method and other params, and no stdio server left.
func FuzzFromEditor(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/","mcpServers":[{"name":"fs","command":"x","args":[],"env":[]}]}}` + "\n"))
	f.Add([]byte(`{"jsonrpc":"2.0","id":"k","method":"session/load","params":{"sessionId":"s","mcpServers":[{"type":"http","name":"h","url":"https://x.example/"},{"type":"stdio","name":"<&>"}]}}`))
	f.Add([]byte(`{"id":null,"method":"session/new","params":{"mcpServers":[{"command":1}]}}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		p := newProxy()
		out, after := p.fromEditor(line)
		if after != nil {
			t.Fatal("nothing is written after an editor line")
		}
		if bytes.Equal(out, line) {
			return
		}
		var in, sent map[string]json.RawMessage
		if json.Unmarshal(line, &in) != nil || json.Unmarshal(out, &sent) != nil {
			t.Fatalf("rewrote a line that is not JSON, or into one: %q -> %q", line, out)
		}
		if bytes.Count(out, []byte("\n")) != 1 || !bytes.HasSuffix(out, []byte("\n")) {
			t.Fatalf("not one line: %q", out)
		}
		if compactID(in["id"]) != compactID(sent["id"]) || compactID(in["method"]) != compactID(sent["method"]) {
			t.Fatalf("id or method changed: %q -> %q", line, out)
		}
		var params map[string]json.RawMessage
		json.Unmarshal(sent["params"], &params)
		var servers []map[string]json.RawMessage
		json.Unmarshal(params["mcpServers"], &servers)
		for _, s := range servers {
			var typ string
			json.Unmarshal(s["type"], &typ)
			if _, cmd := s["command"]; typ == "stdio" || (typ == "" && cmd) {
				t.Fatalf("a stdio server reached the phone: %q", out)
			}
		}
		if !p.waiting() {
			t.Fatal("a rewritten request waits for no notice")
		}
	})
}
