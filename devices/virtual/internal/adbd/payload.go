//go:build linux

package adbd

import (
	"io"
	"sync"

	"github.com/agentoslab/agentlab/devices/internal/adbwire"
)

// payloads recycles buffers for WRTE payloads larger than smallPayload: a
// push moves its data through a few of them instead of allocating (and
// clearing) a fresh megabyte per WRTE. Whoever holds a payload gives it
// back with putPayload once its bytes are used.
var payloads = sync.Pool{New: func() any {
	b := make([]byte, adbwire.MaxPayload)
	return &b
}}

// smallPayload is the largest payload allocated to size.
const smallPayload = 64 << 10

func getPayload(n uint32) []byte {
	if n <= smallPayload {
		return make([]byte, n)
	}
	return (*payloads.Get().(*[]byte))[:n]
}

func putPayload(b []byte) {
	if cap(b) == adbwire.MaxPayload {
		b = b[:cap(b)]
		payloads.Put(&b)
	}
}

// payloadReader reads a stream's payloads in place: Read copies out,
// next and WriteTo hand out the payload's own bytes. A payload stays
// valid until the reader moves on to the next one; onNext, when set, runs
// just before it does (the sync service writes the file data it gathered
// from the payload there). Not safe for concurrent use.
type payloadReader struct {
	take   func() ([]byte, error)
	onNext func()
	buf    []byte // the payload being read
	cur    []byte // its unread part
}

// fill makes cur hold unread bytes, moving on to the next payload if
// needed; io.EOF at the end of the stream.
func (r *payloadReader) fill() error {
	for len(r.cur) == 0 {
		if r.buf != nil {
			if r.onNext != nil {
				r.onNext()
			}
			putPayload(r.buf)
			r.buf = nil
		}
		b, err := r.take()
		if err != nil {
			return err
		}
		r.buf, r.cur = b, b
	}
	return nil
}

func (r *payloadReader) Read(p []byte) (int, error) {
	if err := r.fill(); err != nil {
		return 0, err
	}
	n := copy(p, r.cur)
	r.cur = r.cur[n:]
	return n, nil
}

// next returns up to n of the next bytes without copying them; they stay
// valid until the reader moves on to the next payload.
func (r *payloadReader) next(n int) ([]byte, error) {
	if err := r.fill(); err != nil {
		return nil, err
	}
	b := r.cur[:min(n, len(r.cur))]
	r.cur = r.cur[len(b):]
	return b, nil
}

// WriteTo writes every payload to w as it comes, until the end of the
// stream.
func (r *payloadReader) WriteTo(w io.Writer) (int64, error) {
	var total int64
	for {
		if err := r.fill(); err != nil {
			if err == io.EOF {
				return total, nil
			}
			return total, err
		}
		n, err := w.Write(r.cur)
		total += int64(n)
		r.cur = r.cur[n:]
		if err != nil {
			return total, err
		}
	}
}
