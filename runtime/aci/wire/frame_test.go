package wire

import (
	"bytes"
	"encoding/binary"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func frame(m Magic, n uint32, payload []byte) []byte {
	b := append([]byte{}, m[:]...)
	b = binary.BigEndian.AppendUint32(b, n)
	return append(b, payload...)
}

func TestFrameRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	require.NoError(t, WriteFrame(&buf, MagicRequest, []byte(`{"method":"ping"}`)))
	assert.Equal(t, frame(MagicRequest, 17, []byte(`{"method":"ping"}`)), buf.Bytes())
	got, err := ReadFrame(&buf, MagicRequest)
	require.NoError(t, err)
	assert.Equal(t, `{"method":"ping"}`, string(got))
	_, err = ReadFrame(&buf, MagicRequest)
	assert.ErrorIs(t, err, io.EOF)
}

func TestFrameLimits(t *testing.T) {
	big := make([]byte, MaxPayload)
	var buf bytes.Buffer
	require.NoError(t, WriteFrame(&buf, MagicResponse, big), "exactly 8 MiB is allowed")
	got, err := ReadFrame(&buf, MagicResponse)
	require.NoError(t, err)
	assert.Len(t, got, MaxPayload)

	assert.ErrorIs(t, WriteFrame(io.Discard, MagicResponse, nil), ErrFrameSize)
	assert.ErrorIs(t, WriteFrame(io.Discard, MagicResponse, make([]byte, MaxPayload+1)), ErrFrameSize)

	tests := []struct {
		name string
		in   []byte
		want error
	}{
		{"zero length", frame(MagicRequest, 0, nil), ErrFrameSize},
		{"over 8 MiB", frame(MagicRequest, MaxPayload+1, nil), ErrFrameSize},
		{"huge length is refused before allocating", frame(MagicRequest, 0xFFFFFFFF, nil), ErrFrameSize},
		{"response magic where a request is due", frame(MagicResponse, 2, []byte("{}")), ErrBadMagic},
		{"lower-case magic", frame(Magic{'a', 'c', 'i', 's'}, 2, []byte("{}")), ErrBadMagic},
		{"cut in the header", []byte("ACIS\x00\x00"), io.ErrUnexpectedEOF},
		{"cut in the payload", frame(MagicRequest, 10, []byte("{}")), io.ErrUnexpectedEOF},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ReadFrame(bytes.NewReader(tt.in), MagicRequest)
			assert.ErrorIs(t, err, tt.want)
		})
	}
}

// FuzzReadFrame: whatever the bytes, ReadFrame returns a payload of
// 1..MaxPayload bytes that is exactly what the frame announced, or an
// error, and never reads past the frame.
func FuzzReadFrame(f *testing.F) {
	f.Add(frame(MagicRequest, 2, []byte("{}")))
	f.Add(frame(MagicRequest, 0, nil))
	f.Add(frame(MagicRequest, 0xFFFFFFFF, []byte("x")))
	f.Add([]byte("ACIS"))
	f.Add(append(frame(MagicRequest, 1, []byte("x")), "trailing"...))
	f.Fuzz(func(t *testing.T, in []byte) {
		r := bytes.NewReader(in)
		p, err := ReadFrame(r, MagicRequest)
		if err != nil {
			return
		}
		n := binary.BigEndian.Uint32(in[4:8])
		if len(p) == 0 || len(p) > MaxPayload || uint32(len(p)) != n {
			t.Fatalf("payload of %d bytes for a frame of %d", len(p), n)
		}
		if !bytes.Equal(p, in[8:8+n]) {
			t.Fatal("payload differs from the frame's bytes")
		}
		if r.Len() != len(in)-8-int(n) {
			t.Fatal("read past the frame")
		}
	})
}

func TestMessageStrictness(t *testing.T) {
	good := `{"method":"call","capability":"browser_open","params":{"url":{"string":"http://x"}},"callId":"1","callerPkg":"a.b"}`
	r, err := DecodeRequest([]byte(good))
	require.NoError(t, err)
	assert.Equal(t, "http://x", r.Params["url"].Str())

	r, err = DecodeRequest([]byte(`{"capability":"x"}`))
	require.NoError(t, err)
	assert.Equal(t, MethodCall, r.Method, "no method is a call, as upstream's fast path")

	bad := map[string]string{
		"case-folded key":         `{"Capability":"x"}`,
		"unknown key":             `{"capability":"x","confirm":true}`,
		"repeated key":            `{"capability":"x","capability":"y"}`,
		"unknown method":          `{"method":"exec","capability":"x"}`,
		"call without capability": `{"method":"call"}`,
		"untyped param":           `{"capability":"x","params":{"limit":5}}`,
		"param with two types":    `{"capability":"x","params":{"limit":{"int":5,"string":"5"}}}`,
		"fractional int":          `{"capability":"x","params":{"limit":{"int":5.5}}}`,
		"repeated param":          `{"capability":"x","params":{"a":{"int":1},"a":{"int":2}}}`,
		"not an object":           `["call"]`,
		"trailing data":           `{"capability":"x"}{}`,
	}
	for name, in := range bad {
		_, err := DecodeRequest([]byte(in))
		assert.Error(t, err, name)
	}

	_, err = DecodeResponse([]byte(`{"progress":{"percent":101}}`))
	assert.ErrorIs(t, err, ErrMessage)
	_, err = DecodeResponse([]byte(`{"success":true,"Result":{}}`))
	assert.ErrorIs(t, err, ErrMessage)
}

func TestResponseRoundTrip(t *testing.T) {
	in := &Response{Success: true, CallID: "c1", Result: Bundle{
		"s": String("é/\"x"), "i": Int(-1 << 62), "d": Double(0.5), "b": Bool(false),
		"y": Bytes([]byte{0, 1, 255}), "a": Strings([]string{"x", ""}),
	}}
	p, err := EncodeResponse(in)
	require.NoError(t, err)
	out, err := DecodeResponse(p)
	require.NoError(t, err)
	require.Len(t, out.Result, len(in.Result))
	for k, v := range in.Result {
		assert.True(t, v.Equal(out.Result[k]), k)
	}
	_, err = EncodeResponse(&Response{Result: Bundle{"z": {}}})
	assert.Error(t, err, "a value without a type is never sent")
}
