package plugin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

func TestFrameReader(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 20)
	tests := []struct {
		name  string
		in    string
		max   int
		lines []string // "!N" = oversized line of N bytes
	}{
		{"plain", "a\nbb\n", 10, []string{"a", "bb"}},
		{"crlf", "a\r\nb\r\n", 10, []string{"a", "b"}},
		{"final line without newline", "a\nb", 10, []string{"a", "b"}},
		{"empty lines", "\n\na\n", 10, []string{"", "", "a"}},
		{"exactly the limit", "0123456789\n", 10, []string{"0123456789"}},
		{"one over", "0123456789a\nok\n", 10, []string{"!11", "ok"}},
		{"far over, resync", long + "\nok\n", 5, []string{"!20", "ok"}},
		{"over at EOF", long, 5, []string{"!20"}},
		// UTF-16: an astral character counts two units.
		{"astral within", "😀😀\n", 4, []string{"😀😀"}},
		{"astral over", "😀😀😀\nz\n", 4, []string{"!12", "z"}},
		// CJK: three bytes, one unit each.
		{"cjk at limit", "一二三\n", 3, []string{"一二三"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFrameReader(strings.NewReader(tc.in), tc.max)
			var got []string
			for {
				line, over, err := f.next()
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					t.Fatalf("next: %v", err)
				}
				if over != nil {
					got = append(got, "!"+itoa(over.bytes))
					continue
				}
				got = append(got, string(line))
			}
			if strings.Join(got, "|") != strings.Join(tc.lines, "|") {
				t.Fatalf("lines = %q, want %q", got, tc.lines)
			}
		})
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// A 10 MB line passes through a small buffer: the reader keeps only its
// head, however large the line.
func TestFrameReaderBoundsMemory(t *testing.T) {
	t.Parallel()
	big := `{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"` + strings.Repeat("y", 10<<20) + `"}]}}`
	f := newFrameReader(strings.NewReader(big+"\n"+`{"jsonrpc":"2.0","id":8,"result":{}}`+"\n"), MaxMessageChars)
	_, over, err := f.next()
	if err != nil || over == nil {
		t.Fatalf("next = %v, %v; want oversized", over, err)
	}
	if len(over.head) > headBytes || cap(f.buf) > 3*MaxMessageChars+2+64*1024 {
		t.Fatalf("kept %d bytes of head, buffer cap %d", len(over.head), cap(f.buf))
	}
	id, isReq, ok := headID(over.head)
	if !ok || isReq || id != float64(7) {
		t.Fatalf("headID = %v, %v, %v", id, isReq, ok)
	}
	line, _, err := f.next()
	if err != nil || !strings.Contains(string(line), `"id":8`) {
		t.Fatalf("after the big line: %q, %v", line, err)
	}
}

func TestHeadID(t *testing.T) {
	t.Parallel()
	tests := []struct {
		head  string
		id    any
		isReq bool
		ok    bool
	}{
		{`{"jsonrpc":"2.0","id":3,"result":{"x":"yyyy`, float64(3), false, true},
		{`{"jsonrpc":"2.0","id":"a-1","method":"tools/call","params":{"na`, "a-1", true, true},
		{`{"jsonrpc":"2.0","method":"notifications/x","params":{"na`, nil, true, false},
		{`{"result":{"x":"yyyyyyy`, nil, false, false},
		{`[1,2`, nil, false, false},
		{`{"id":{"x":1}}`, nil, false, false},
		{``, nil, false, false},
	}
	for _, tc := range tests {
		id, isReq, ok := headID([]byte(tc.head))
		if id != tc.id || isReq != tc.isReq || ok != tc.ok {
			t.Errorf("headID(%q) = %v, %v, %v; want %v, %v, %v", tc.head, id, isReq, ok, tc.id, tc.isReq, tc.ok)
		}
	}
}

// pipeConn returns both ends of a connected unix socket pair.
func pipeConn(t *testing.T) (net.Conn, net.Conn) {
	t.Helper()
	dir := t.TempDir()
	ln, err := net.Listen("unix", dir+"/s")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	ch := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		ch <- c
	}()
	a, err := net.Dial("unix", dir+"/s")
	if err != nil {
		t.Fatal(err)
	}
	b := <-ch
	t.Cleanup(func() { a.Close(); b.Close() })
	return a, b
}

func TestConnOversizeAndGarbage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a, b := pipeConn(t)
	srv, err := (&Transport{Conn: a, MaxChars: 100, Serving: true}).Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	go func() {
		b.Write([]byte("not json\n"))
		b.Write([]byte(`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"x":"` + strings.Repeat("z", 200) + `"}}` + "\n"))
		b.Write([]byte(`{"jsonrpc":"2.0","id":5,"method":"ping"}` + "\n"))
	}()
	// The server side answers the garbage and the over-long request by
	// itself and hands on only the valid request.
	msg, err := srv.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if req, ok := msg.(*jsonrpc.Request); !ok || req.Method != "ping" {
		t.Fatalf("read %#v", msg)
	}
	buf := make([]byte, 4096)
	b.SetReadDeadline(time.Now().Add(5 * time.Second))
	var got []byte
	for bytes.Count(got, []byte("\n")) < 2 {
		n, err := b.Read(buf)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, buf[:n]...)
	}
	lines := strings.Split(strings.TrimSpace(string(got)), "\n")
	if !strings.Contains(lines[0], `"id":null`) || !strings.Contains(lines[0], "-32700") {
		t.Errorf("garbage answered %s", lines[0])
	}
	if !strings.Contains(lines[1], `"id":4`) || !strings.Contains(lines[1], "-32603") {
		t.Errorf("over-long request answered %s", lines[1])
	}

	// An over-long response becomes an error response for its id.
	cli, _ := (&Transport{Conn: b, MaxChars: 100}).Connect(ctx)
	defer cli.Close()
	go a.Write([]byte(`{"jsonrpc":"2.0","id":9,"result":{"t":"` + strings.Repeat("q", 500) + `"}}` + "\n"))
	msg, err = cli.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	resp, ok := msg.(*jsonrpc.Response)
	if !ok || resp.ID.Raw() != int64(9) || resp.Error == nil {
		t.Fatalf("read %#v", msg)
	}

	// Writing an over-long request fails without sending; an over-long
	// response is replaced by an error response.
	id1, _ := jsonrpc.MakeID(float64(1))
	id2, _ := jsonrpc.MakeID(float64(2))
	req := &jsonrpc.Request{ID: id1, Method: "x", Params: json.RawMessage(`{"p":"` + strings.Repeat("r", 200) + `"}`)}
	if err := cli.Write(ctx, req); !errors.Is(err, ErrMessageTooLarge) {
		t.Fatalf("write big request: %v", err)
	}
	big := &jsonrpc.Response{ID: id2, Result: json.RawMessage(`{"p":"` + strings.Repeat("r", 200) + `"}`)}
	if err := srv.Write(ctx, big); err != nil {
		t.Fatal(err)
	}
	msg, err = cli.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if resp, ok := msg.(*jsonrpc.Response); !ok || resp.Error == nil || resp.ID.Raw() != int64(2) {
		t.Fatalf("read %#v", msg)
	}
}

func TestConnCloseUnblocksRead(t *testing.T) {
	t.Parallel()
	a, _ := pipeConn(t)
	c, _ := (&Transport{Conn: a}).Connect(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := c.Read(context.Background())
		done <- err
	}()
	c.Close()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("read returned a message after close")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("read still blocked after close")
	}
}

// FuzzFrameReader feeds arbitrary streams: the reader never returns a
// line over the limit, never keeps more than the head of a long line,
// and consumes the whole input.
func FuzzFrameReader(f *testing.F) {
	f.Add([]byte("a\nb\n"), 4)
	f.Add([]byte("😀😀😀\r\n\n"), 3)
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"result":{}}`+"\n"), 8)
	f.Add(bytes.Repeat([]byte{0xff}, 70), 16)
	f.Add([]byte("\r\r\r\n"), 1)
	f.Fuzz(func(t *testing.T, in []byte, max int) {
		if max <= 0 || max > 1<<16 {
			max = 1 + (max&0x7fff)%64
		}
		src := bytes.NewReader(in)
		fr := newFrameReader(src, max)
		for i := 0; ; i++ {
			if i > len(in)+2 {
				t.Fatal("more lines than bytes")
			}
			line, over, err := fr.next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("next: %v", err)
			}
			if over != nil {
				if len(over.head) > headBytes {
					t.Fatalf("head of %d bytes", len(over.head))
				}
				headID(over.head) // must not panic
				continue
			}
			if n := utf16Units(line); n > max {
				t.Fatalf("line of %d units over %d", n, max)
			}
		}
		if src.Len() != 0 {
			t.Fatalf("%d bytes left unread", src.Len())
		}
	})
}

func utf16Units(b []byte) int {
	n := 0
	for _, r := range string(b) {
		if r >= 0x10000 {
			n += 2
		} else {
			n++
		}
	}
	return n
}

// FuzzConnRead feeds arbitrary bytes to a serving connection: Read never
// panics and returns only well-formed messages.
func FuzzConnRead(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"ping"}` + "\n"))
	f.Add([]byte("garbage\n{\"id\":\n"))
	f.Add([]byte(`{"jsonrpc":"2.0","id":"x","result":{"a":"` + strings.Repeat("b", 300) + `"}}` + "\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		c, _ := (&Transport{Conn: &fuzzRW{r: bytes.NewReader(in)}, MaxChars: 128, Serving: true}).Connect(context.Background())
		for range 1000 {
			msg, err := c.Read(context.Background())
			if err != nil {
				return
			}
			if _, err := jsonrpc.EncodeMessage(msg); err != nil {
				t.Fatalf("read an unencodable message: %v", err)
			}
		}
	})
}

type fuzzRW struct {
	r io.Reader
	w bytes.Buffer
}

func (f *fuzzRW) Read(p []byte) (int, error)  { return f.r.Read(p) }
func (f *fuzzRW) Write(p []byte) (int, error) { return f.w.Write(p) }
func (f *fuzzRW) Close() error                { return nil }
