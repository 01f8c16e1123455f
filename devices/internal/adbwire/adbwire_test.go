package adbwire

import (
	"bytes"
	"errors"
	"io"
	"testing"
)

func TestMessageRoundTrip(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		m    Message
	}{
		{"cnxn", Message{Command: CmdCNXN, Arg0: Version, Arg1: MaxPayload, Data: []byte("host::features=shell_v2")}},
		{"open", Message{Command: CmdOPEN, Arg0: 7, Data: []byte("shell:id\x00")}},
		{"okay", Message{Command: CmdOKAY, Arg0: 1, Arg1: 7}},
		{"wrte", Message{Command: CmdWRTE, Arg0: 1, Arg1: 7, Data: bytes.Repeat([]byte{0xff}, 4096)}},
		{"clse", Message{Command: CmdCLSE, Arg1: 7}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := tt.m.MarshalBinary()
			if err != nil {
				t.Fatal(err)
			}
			got, err := ReadMessage(bytes.NewReader(b), MaxPayload)
			if err != nil {
				t.Fatalf("ReadMessage: %v", err)
			}
			if got.Command != tt.m.Command || got.Arg0 != tt.m.Arg0 || got.Arg1 != tt.m.Arg1 || !bytes.Equal(got.Data, tt.m.Data) {
				t.Fatalf("round trip: got %+v want %+v", got, tt.m)
			}
		})
	}
}

func TestReadMessageErrors(t *testing.T) {
	t.Parallel()
	good, _ := (&Message{Command: CmdWRTE, Arg0: 1, Arg1: 2, Data: []byte("abcd")}).MarshalBinary()
	badMagic := bytes.Clone(good)
	badMagic[20] ^= 1
	tests := []struct {
		name    string
		in      []byte
		max     uint32
		wantErr error
	}{
		{"bad magic", badMagic, MaxPayload, ErrBadMagic},
		{"too large", good, 3, ErrTooLarge},
		{"short header", good[:10], MaxPayload, io.ErrUnexpectedEOF},
		{"short payload", good[:26], MaxPayload, io.ErrUnexpectedEOF},
		{"empty", nil, MaxPayload, io.EOF},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ReadMessage(bytes.NewReader(tt.in), tt.max)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
		})
	}
}

// TestReadHeaderPayload decodes a stream of messages the way a read loop
// does, into one header array and one payload buffer: each message is
// whole before the next is read, and a short payload is an error.
func TestReadHeaderPayload(t *testing.T) {
	t.Parallel()
	msgs := []Message{
		{Command: CmdWRTE, Arg0: 1, Arg1: 2, Data: bytes.Repeat([]byte{0xaa}, 3000)},
		{Command: CmdOKAY, Arg0: 2, Arg1: 1},
		{Command: CmdWRTE, Arg0: 1, Arg1: 2, Data: []byte("short")},
	}
	var in []byte
	for i := range msgs {
		in, _ = msgs[i].AppendBinary(in)
	}
	r := &oneByteReader{in}
	var h [HeaderSize]byte
	buf := make([]byte, 4096)
	for i, want := range msgs {
		m, n, err := ReadHeader(r, &h, 4096)
		if err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		if err := ReadPayload(r, m.Command, buf[:n]); err != nil {
			t.Fatalf("message %d payload: %v", i, err)
		}
		if m.Command != want.Command || m.Arg0 != want.Arg0 || m.Arg1 != want.Arg1 || !bytes.Equal(buf[:n], want.Data) {
			t.Fatalf("message %d = %+v %q, want %+v", i, m, buf[:n], want)
		}
	}
	if _, _, err := ReadHeader(r, &h, 4096); err != io.EOF {
		t.Fatalf("end: %v", err)
	}
	cut := in[:HeaderSize+100]
	r = &oneByteReader{cut}
	m, n, err := ReadHeader(r, &h, 4096)
	if err != nil {
		t.Fatal(err)
	}
	if err := ReadPayload(r, m.Command, buf[:n]); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("cut payload: %v", err)
	}
	if _, _, err := ReadHeader(bytes.NewReader(in), &h, 100); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("over the limit: %v", err)
	}
}

func TestCommandString(t *testing.T) {
	t.Parallel()
	for c, want := range map[Command]string{CmdCNXN: "CNXN", CmdOPEN: "OPEN", CmdOKAY: "OKAY", CmdWRTE: "WRTE", CmdCLSE: "CLSE", CmdAUTH: "AUTH", Command(1): "0x00000001"} {
		if got := c.String(); got != want {
			t.Errorf("%#x.String() = %q, want %q", uint32(c), got, want)
		}
	}
}

func TestBanner(t *testing.T) {
	t.Parallel()
	b := Banner{Product: "sdk_phone", Model: "Virtual", Device: "vdev", Features: []string{"shell_v2", "cmd"}}
	want := "device::ro.product.name=sdk_phone;ro.product.model=Virtual;ro.product.device=vdev;features=shell_v2,cmd"
	if got := b.String(); got != want {
		t.Fatalf("banner = %q, want %q", got, want)
	}
}

func TestOpenDestination(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{"shell:id\x00": "shell:id", "sync:": "sync:", "tcp:1\x00\x00": "tcp:1", "": ""} {
		if got := OpenDestination([]byte(in)); got != want {
			t.Errorf("OpenDestination(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestParseSendTarget(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in       string
		path     string
		mode     uint32
		wantFail bool
	}{
		{"/data/local/tmp/a,33188", "/data/local/tmp/a", 33188, false},
		{"/sdcard/a,b.txt,0644", "/sdcard/a,b.txt", 0o644, false},
		{"/x,0x1a4", "/x", 0x1a4, false},
		{"/nocomma", "/nocomma", 0, false},
		{"/x,", "/x", 0, false},
		{"/x,12z", "", 0, true},
		{"/x,99999999999", "", 0, true},
	}
	for _, tt := range tests {
		p, m, err := ParseSendTarget(tt.in)
		if (err != nil) != tt.wantFail {
			t.Fatalf("ParseSendTarget(%q) err = %v, wantFail %v", tt.in, err, tt.wantFail)
		}
		if err == nil && (p != tt.path || m != tt.mode) {
			t.Errorf("ParseSendTarget(%q) = %q, %#o; want %q, %#o", tt.in, p, m, tt.path, tt.mode)
		}
	}
}

func TestSyncSendBody(t *testing.T) {
	t.Parallel()
	var b []byte
	b = AppendSyncRequest(b, SyncSEND, "/data/local/tmp/f,33188")
	payload := bytes.Repeat([]byte("x"), MaxSyncData+10)
	b = AppendSyncData(b, payload[:MaxSyncData])
	b = AppendSyncData(b, payload[MaxSyncData:])
	b = AppendSyncDone(b, 1234)
	b = AppendSyncRequest(b, SyncQUIT, "")
	// One byte at a time: sync messages are not aligned with WRTEs.
	r := io.Reader(&oneByteReader{b})
	req, err := ReadSyncRequest(r)
	if err != nil || req.ID != SyncSEND || req.Path != "/data/local/tmp/f,33188" {
		t.Fatalf("request = %+v, %v", req, err)
	}
	buf := make([]byte, MaxSyncData)
	var got []byte
	for {
		data, done, mtime, err := ReadSendChunk(r, buf)
		if err != nil {
			t.Fatal(err)
		}
		if done {
			if mtime != 1234 {
				t.Fatalf("mtime = %d", mtime)
			}
			break
		}
		got = append(got, data...)
	}
	if !bytes.Equal(got, payload) {
		t.Fatalf("body differs: %d bytes, want %d", len(got), len(payload))
	}
	if req, err := ReadSyncRequest(r); err != nil || req.ID != SyncQUIT {
		t.Fatalf("quit = %+v, %v", req, err)
	}
}

func TestSyncErrors(t *testing.T) {
	t.Parallel()
	long := AppendSyncRequest(nil, SyncSTAT, string(bytes.Repeat([]byte("a"), MaxSyncPath+1)))
	if _, err := ReadSyncRequest(bytes.NewReader(long)); !errors.Is(err, ErrPathTooLong) {
		t.Errorf("long path: %v", err)
	}
	big := appendHeader(nil, SyncDATA, MaxSyncData+1)
	if _, _, _, err := ReadSendChunk(bytes.NewReader(big), make([]byte, MaxSyncData)); !errors.Is(err, ErrChunkTooLong) {
		t.Errorf("big chunk: %v", err)
	}
	other := AppendSyncRequest(nil, SyncRECV, "/x")
	if _, _, _, err := ReadSendChunk(bytes.NewReader(other), make([]byte, MaxSyncData)); !errors.Is(err, ErrUnexpected) {
		t.Errorf("RECV in SEND: %v", err)
	}
	if _, _, _, err := ReadSendChunk(bytes.NewReader(appendHeader(nil, SyncDATA, 4)), make([]byte, MaxSyncData)); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("truncated data: %v", err)
	}
}

func TestReadSendHeader(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		in      []byte
		n       uint32
		done    bool
		mtime   uint32
		wantErr error
	}{
		{"data", AppendSyncData(nil, []byte("abc")), 3, false, 0, nil},
		{"largest data", appendHeader(nil, SyncDATA, MaxSyncData), MaxSyncData, false, 0, nil},
		{"done", AppendSyncDone(nil, 77), 0, true, 77, nil},
		{"data too long", appendHeader(nil, SyncDATA, MaxSyncData+1), 0, false, 0, ErrChunkTooLong},
		{"peer failed", AppendSyncFail(nil, "disk full"), 0, false, 0, ErrUnexpected},
		{"fail cut", appendHeader(nil, SyncFAIL, 10), 0, false, 0, io.ErrUnexpectedEOF},
		{"request inside send", AppendSyncRequest(nil, SyncRECV, "/x"), 0, false, 0, ErrUnexpected},
		{"header cut", []byte("DAT"), 0, false, 0, io.ErrUnexpectedEOF},
		{"nothing", nil, 0, false, 0, io.ErrUnexpectedEOF},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, done, mtime, err := ReadSendHeader(bytes.NewReader(tt.in))
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if n != tt.n || done != tt.done || mtime != tt.mtime {
				t.Fatalf("= %d %v %d, want %d %v %d", n, done, mtime, tt.n, tt.done, tt.mtime)
			}
		})
	}
}

func TestSyncReplies(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		got  []byte
		want []byte
	}{
		{"okay", AppendSyncOkay(nil), []byte("OKAY\x00\x00\x00\x00")},
		{"fail", AppendSyncFail(nil, "no"), []byte("FAIL\x02\x00\x00\x00no")},
		{"stat", AppendSyncStatV1(nil, 0o100644, 5, 7), []byte("STAT\xa4\x81\x00\x00\x05\x00\x00\x00\x07\x00\x00\x00")},
		{"dent", AppendSyncDent(nil, 1, 2, 3, "ab"), []byte("DENT\x01\x00\x00\x00\x02\x00\x00\x00\x03\x00\x00\x00\x02\x00\x00\x00ab")},
		{"list done", AppendSyncListDone(nil), append([]byte("DONE"), make([]byte, 16)...)},
	}
	for _, tt := range tests {
		if !bytes.Equal(tt.got, tt.want) {
			t.Errorf("%s = %q, want %q", tt.name, tt.got, tt.want)
		}
	}
	if n := len(AppendSyncStatV2(nil, SyncSTA2, &StatV2{})); n != SyncStatV2Size {
		t.Errorf("stat v2 size = %d", n)
	}
}

func TestShellPackets(t *testing.T) {
	t.Parallel()
	var b []byte
	b = AppendShellPacket(b, ShellStdout, []byte("hello\n"))
	b = AppendShellPacket(b, ShellStderr, nil)
	b = AppendShellPacket(b, ShellExit, []byte{3})
	r := &oneByteReader{b}
	want := []struct {
		id   byte
		data string
	}{{ShellStdout, "hello\n"}, {ShellStderr, ""}, {ShellExit, "\x03"}}
	for _, w := range want {
		id, data, err := ReadShellPacket(r, MaxShellPacketLen)
		if err != nil || id != w.id || string(data) != w.data {
			t.Fatalf("packet = %d %q %v, want %d %q", id, data, err, w.id, w.data)
		}
	}
	if _, _, err := ReadShellPacket(r, MaxShellPacketLen); err != io.EOF {
		t.Fatalf("end: %v", err)
	}
	if _, _, err := ReadShellPacket(bytes.NewReader(AppendShellPacket(nil, 1, []byte("abc"))), 2); !errors.Is(err, ErrShellTooLong) {
		t.Fatalf("too long: %v", err)
	}
}

type oneByteReader struct{ b []byte }

func (r *oneByteReader) Read(p []byte) (int, error) {
	if len(r.b) == 0 {
		return 0, io.EOF
	}
	if len(p) == 0 {
		return 0, nil
	}
	p[0] = r.b[0]
	r.b = r.b[1:]
	return 1, nil
}
