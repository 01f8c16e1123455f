//go:build linux

package adbd

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentoslab/agentlab/devices/internal/adbwire"
	"golang.org/x/sys/unix"
)

// payloadsOf returns a take function handing out pieces one by one, and
// records the order of takes and onNext calls in log.
func payloadsOf(pieces []string, log *strings.Builder) func() ([]byte, error) {
	return func() ([]byte, error) {
		if len(pieces) == 0 {
			log.WriteString("eof;")
			return nil, io.EOF
		}
		p := pieces[0]
		pieces = pieces[1:]
		fmt.Fprintf(log, "take %q;", p)
		return []byte(p), nil
	}
}

func TestPayloadReader(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		pieces []string
		ops    []int // > 0: next(n); < 0: Read of -n bytes
		want   []string
		log    string
	}{
		{
			name:   "next stays inside a payload",
			pieces: []string{"abcdef", "gh"},
			ops:    []int{4, 4, 4},
			want:   []string{"abcd", "ef", "gh"},
			log:    `take "abcdef";next;take "gh";`,
		},
		{
			name:   "read copies across payloads one at a time",
			pieces: []string{"ab", "", "cd"},
			ops:    []int{-3, -3},
			want:   []string{"ab", "cd"},
			log:    `take "ab";next;take "";next;take "cd";`,
		},
		{
			name:   "end of stream",
			pieces: []string{"x"},
			ops:    []int{5, 5},
			want:   []string{"x", "EOF"},
			log:    `take "x";next;eof;`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var log strings.Builder
			r := &payloadReader{take: payloadsOf(tt.pieces, &log), onNext: func() { log.WriteString("next;") }}
			var got []string
			for _, op := range tt.ops {
				var b []byte
				var err error
				if op > 0 {
					b, err = r.next(op)
				} else {
					buf := make([]byte, -op)
					var n int
					n, err = r.Read(buf)
					b = buf[:n]
				}
				if err != nil {
					got = append(got, err.Error())
					continue
				}
				got = append(got, string(b))
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) || log.String() != tt.log {
				t.Fatalf("got %q, log %s; want %q, log %s", got, log.String(), tt.want, tt.log)
			}
		})
	}
}

// TestPayloadReaderWriteTo: io.Copy from a stream's reader hands the
// payloads themselves to the writer, one Write each.
func TestPayloadReaderWriteTo(t *testing.T) {
	t.Parallel()
	var log strings.Builder
	r := &payloadReader{take: payloadsOf([]string{"one", "", "two"}, &log)}
	var w writesRecorder
	n, err := io.Copy(&w, struct{ io.Reader }{r}) // Read path
	if err != nil || n != 6 || w.String() != "onetwo" {
		t.Fatalf("copy via Read: %d %v %q", n, err, w.String())
	}
	log.Reset()
	r = &payloadReader{take: payloadsOf([]string{"one", "", "two"}, &log)}
	w = writesRecorder{}
	n, err = r.WriteTo(&w)
	if err != nil || n != 6 || fmt.Sprint(w.writes) != "[one two]" {
		t.Fatalf("WriteTo: %d %v %q", n, err, w.writes)
	}
}

type writesRecorder struct {
	bytes.Buffer
	writes []string
}

func (w *writesRecorder) Write(p []byte) (int, error) {
	w.writes = append(w.writes, string(p))
	return w.Buffer.Write(p)
}

// TestGatherWriter: slices are written in order, also past IOV_MAX
// slices; a write error is kept and later data dropped.
func TestGatherWriter(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	f, err := os.Create(filepath.Join(dir, "f"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	g := &gatherWriter{f: f}
	var want []byte
	for i := range 3*maxIOV + 7 {
		b := []byte(fmt.Sprintf("%d,", i))
		want = append(want, b...)
		g.add(b)
		if i == 2000 {
			g.flush()
		}
	}
	g.flush()
	if g.err != nil {
		t.Fatal(g.err)
	}
	got, _ := os.ReadFile(f.Name())
	if !bytes.Equal(got, want) {
		t.Fatalf("file holds %d bytes, want %d", len(got), len(want))
	}

	ro, err := os.Open(f.Name())
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	g = &gatherWriter{f: ro}
	g.add([]byte("x"))
	g.flush()
	if !errors.Is(g.err, unix.EBADF) {
		t.Fatalf("write to a read-only file: %v", g.err)
	}
	first := g.err
	g.add([]byte("y"))
	g.flush()
	if g.err != first || len(g.iov) != 0 {
		t.Fatalf("after a failure: err %v, %d slices kept", g.err, len(g.iov))
	}
}

// FuzzPayloadReader reads a sync session through a payloadReader over the
// input cut into WRTE payloads at arbitrary points, as the sync service
// does (requests copied out, DATA taken as slices), and compares it with
// the session read from the whole input.
func FuzzPayloadReader(f *testing.F) {
	var b []byte
	b = adbwire.AppendSyncRequest(b, adbwire.SyncSEND, "/data/local/tmp/x,33188")
	b = adbwire.AppendSyncData(b, bytes.Repeat([]byte("a"), 300))
	b = adbwire.AppendSyncData(b, []byte("b"))
	b = adbwire.AppendSyncDone(b, 99)
	b = adbwire.AppendSyncRequest(b, adbwire.SyncSTAT, "/x")
	b = adbwire.AppendSyncRequest(b, adbwire.SyncQUIT, "")
	f.Add(b, []byte{3, 0, 1, 200, 7})
	f.Add([]byte("SEND\x03\x00\x00\x00a,1DATA\x05\x00\x00\x00hel"), []byte{9})
	f.Fuzz(func(t *testing.T, in, cuts []byte) {
		var pieces []string
		rest := in
		for _, c := range cuts {
			n := min(int(c), len(rest))
			pieces = append(pieces, string(rest[:n]))
			rest = rest[n:]
		}
		pieces = append(pieces, string(rest))
		var log strings.Builder
		r := &payloadReader{take: payloadsOf(pieces, &log)}
		got := readSession(r, func(n uint32, use func([]byte)) error { return readData(r, n, use) })
		whole := bytes.NewReader(in)
		want := readSession(whole, func(n uint32, use func([]byte)) error {
			b := make([]byte, n)
			if _, err := io.ReadFull(whole, b); err != nil {
				return fmt.Errorf("sync DATA: %w", noEOF(err))
			}
			use(b)
			return nil
		})
		if got != want {
			t.Fatalf("cut into %d payloads:\n%s\nwhole:\n%s", len(pieces), got, want)
		}
	})
}

// readSession reads requests and SEND bodies as serveSync does, and
// returns what it saw.
func readSession(r io.Reader, data func(n uint32, use func([]byte)) error) string {
	var log strings.Builder
	for {
		req, err := adbwire.ReadSyncRequest(r)
		if err != nil {
			fmt.Fprintf(&log, "end: eof %v, path too long %v\n", errors.Is(err, io.EOF), errors.Is(err, adbwire.ErrPathTooLong))
			return log.String()
		}
		fmt.Fprintf(&log, "%s %q\n", req.ID, req.Path)
		if req.ID != adbwire.SyncSEND {
			continue
		}
		for {
			n, done, mtime, err := adbwire.ReadSendHeader(r)
			if err == nil && !done {
				// A chunk counts once whole: a cut one is an error either way.
				var chunk []byte
				if err = data(n, func(b []byte) { chunk = append(chunk, b...) }); err == nil {
					fmt.Fprintf(&log, "DATA %x\n", chunk)
				}
			}
			if err != nil {
				fmt.Fprintf(&log, "send error: unexpected EOF %v, too long %v, unexpected %v\n",
					errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, adbwire.ErrChunkTooLong), errors.Is(err, adbwire.ErrUnexpected))
				return log.String()
			}
			if done {
				fmt.Fprintf(&log, "DONE %d\n", mtime)
				break
			}
		}
	}
}
