package wire

import (
	"bytes"
	"io"
	"strings"
	"testing"
)

// BenchmarkFrameRequest is one typical request through encode, framing
// and decode (the wire's share of a call).
func BenchmarkFrameRequest(b *testing.B) {
	req := &Request{Method: MethodCall, Capability: "browser_open", CallID: NewCallID(), CallerPkg: "org.agentos.sample.notes",
		Params: Bundle{"url": String("https://example.com/page"), "limit": Int(50), "tls_verify": Bool(false)}}
	var buf bytes.Buffer
	b.ReportAllocs()
	for b.Loop() {
		buf.Reset()
		p, err := EncodeRequest(req)
		if err != nil {
			b.Fatal(err)
		}
		if err := WriteFrame(&buf, MagicRequest, p); err != nil {
			b.Fatal(err)
		}
		got, err := ReadFrame(&buf, MagicRequest)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := DecodeRequest(got); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLarge10MB streams a 10 MB text result through the cut and the
// compression in 32 KiB writes (what http_request does with a body):
// the target is well under 150 ms, with memory bounded by the inline
// prefix and the attachment, not by the body (B/op stays far below 10 MB).
func BenchmarkLarge10MB(b *testing.B) {
	chunk := []byte(strings.Repeat("<p>The quick brown fox jumps over the lazy dog.</p>\n", 32<<10/52+1)[:32<<10])
	const total = 10 << 20
	b.ReportAllocs()
	b.SetBytes(total)
	for b.Loop() {
		l := NewLarge("response_body", true, MarkerBody)
		for n := 0; n < total; n += len(chunk) {
			l.Write(chunk)
		}
		r := Bundle{}
		l.Put(r)
		if !r[KeyTruncated].BoolVal() || r["response_body_gz"].IsZero() {
			b.Fatal("not cut and attached")
		}
	}
}

// BenchmarkLarge10MBIncompressible is the same with text that does not
// compress: the attachment is abandoned at 900,000 bytes and the rest is
// only counted.
func BenchmarkLarge10MBIncompressible(b *testing.B) {
	var src bytes.Buffer
	for i := 0; src.Len() < 1<<20; i++ {
		src.WriteString(NewCallID())
	}
	chunk := src.Bytes()
	b.ReportAllocs()
	b.SetBytes(10 << 20)
	for b.Loop() {
		l := NewLarge("response_body", true, MarkerBody)
		for range 10 {
			io.Copy(l, bytes.NewReader(chunk))
		}
		r := Bundle{}
		l.Put(r)
		if !r["response_body_gz"].IsZero() {
			b.Fatal("an incompressible 10 MB body was attached")
		}
	}
}
