package transport

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/agentoslab/agentlab/runtime/errcode"
	"github.com/agentoslab/agentlab/runtime/internal/faultinject"
)

// RPCOptions configure an RPCStream. The zero value works.
type RPCOptions struct {
	// MaxLineChars overrides MaxLineChars (tests and the pairing
	// handshake's 4,096-char first line use smaller limits).
	MaxLineChars int
	// Logger receives framing problems (never line contents).
	Logger *slog.Logger
}

// RPCStream guards one JSON-RPC connection on behalf of a JSON-RPC engine
// such as acp-go-sdk's Connection:
//
//   - Reader yields only lines that are JSON objects, each followed by '\n'.
//   - A line that is not JSON is answered with -32700 (id null); a JSON
//     value that is not an object with "jsonrpc":"2.0" is answered with
//     -32600. Neither reaches the engine, and neither is logged.
//   - A line over the limit closes this connection only.
//   - Writer serializes whole writes, so the engine's messages and the
//     stream's own error replies never interleave.
//   - Writer never sends a line over the limit, which the peer would have
//     to answer by closing the connection (spec §3.6, as the Binder
//     channel does): an oversize request is answered locally with -32603
//     (message "acp-line: message of N chars exceeds 65536"), an oversize
//     response becomes a -32603 error response with the same id, and an
//     oversize notification is dropped, counted (Dropped) and replaced by
//     a small "_org.agentos/dropped" notification that tells the peer
//     which method it lost and how long it was. The connection stays open.
type RPCStream struct {
	rw       io.ReadWriteCloser
	lines    *LineReader
	logger   *slog.Logger
	maxChars int // the line limit, both ways

	dropped atomic.Int64 // oversize notifications not sent

	pr *io.PipeReader
	pw *io.PipeWriter

	writeMu sync.Mutex // guards writes to rw

	closeOnce sync.Once
	done      chan struct{}
	errMu     sync.Mutex
	err       error // why the stream ended; guarded by errMu
}

// NewRPCStream starts guarding rw. The caller must read Reader until EOF
// (the JSON-RPC engine does) and Close the stream when done.
func NewRPCStream(rw io.ReadWriteCloser, opts *RPCOptions) *RPCStream {
	max := 0
	if opts != nil {
		max = opts.MaxLineChars
	}
	return NewRPCStreamFromLines(rw, NewLineReader(rw, max), opts)
}

// NewRPCStreamFromLines is NewRPCStream for a connection whose first lines
// were already consumed by a handshake through lr (e.g. desktop pairing):
// the guard continues with the same buffered reader so no byte is lost.
func NewRPCStreamFromLines(rw io.ReadWriteCloser, lr *LineReader, opts *RPCOptions) *RPCStream {
	if opts == nil {
		opts = &RPCOptions{}
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	max := opts.MaxLineChars
	if max <= 0 {
		max = MaxLineChars
	}
	pr, pw := io.Pipe()
	s := &RPCStream{rw: rw, lines: lr, logger: logger, maxChars: max, pr: pr, pw: pw, done: make(chan struct{})}
	go s.pump()
	return s
}

// Reader is what the JSON-RPC engine reads.
func (s *RPCStream) Reader() io.Reader { return s.pr }

// Writer is what the JSON-RPC engine writes to. Each Write is one
// message and is sent whole, unless it is over the line limit (see
// RPCStream).
func (s *RPCStream) Writer() io.Writer { return lockedWriter{s} }

// Dropped is how many oversize notifications were not sent.
func (s *RPCStream) Dropped() int64 { return s.dropped.Load() }

// Done is closed when the connection ended (peer closed, oversize line,
// or Close).
func (s *RPCStream) Done() <-chan struct{} { return s.done }

// Err says why the stream ended: nil for a clean EOF or Close,
// ErrLineTooLong, or a read error.
func (s *RPCStream) Err() error {
	s.errMu.Lock()
	defer s.errMu.Unlock()
	return s.err
}

// Close closes the connection; Reader then reports EOF. Idempotent.
func (s *RPCStream) Close() error {
	s.finish(nil)
	return nil
}

func (s *RPCStream) finish(err error) {
	s.closeOnce.Do(func() {
		s.errMu.Lock()
		s.err = err
		s.errMu.Unlock()
		s.rw.Close()
		s.pw.Close()
		close(s.done)
	})
}

type lockedWriter struct{ s *RPCStream }

func (w lockedWriter) Write(p []byte) (int, error) {
	line := bytes.TrimRight(p, "\r\n")
	// Bytes bound UTF-16 units from above: count only when it may matter.
	if len(line) > w.s.maxChars {
		if n := UTF16Len(line); n > w.s.maxChars && faultinject.Enabled && faultinject.Active(faultinject.OversizeClosesChannel) {
			return 0, ErrLineTooLong // injected fault: the caller of Write ends the connection
		} else if n > w.s.maxChars {
			return len(p), w.s.oversize(line, n)
		}
	}
	w.s.writeMu.Lock()
	defer w.s.writeMu.Unlock()
	return w.s.rw.Write(p)
}

// oversize handles a message of n chars the peer could not read.
func (s *RPCStream) oversize(line []byte, n int) error {
	var probe struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	json.Unmarshal(line, &probe) // an unparseable message is dropped below
	id := validID(&probe.ID)
	msg := fmt.Sprintf("acp-line: message of %d chars exceeds %d", n, s.maxChars)
	switch {
	case probe.Method != "" && id != nil:
		// A request: the engine gets its answer from here, so it does
		// not wait for one that can never come.
		s.logger.Warn("oversize request answered locally", "method", probe.Method, "chars", n)
		_, err := s.pw.Write(errorReply(id, -32603, msg))
		if err != nil {
			return fmt.Errorf("transport: %s: %w", msg, err)
		}
		return nil
	case probe.Method == "" && id != nil:
		s.logger.Warn("oversize response replaced by an error", "chars", n)
		s.writeReply(errorReply(id, -32603, msg))
		return nil
	default:
		s.dropped.Add(1)
		s.logger.Warn("oversize notification dropped", "method", probe.Method, "chars", n)
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": DroppedMethod,
			"params": map[string]any{"method": probe.Method, "chars": n, "limit": s.maxChars}})
		s.writeReply(append(b, '\n'))
		return nil
	}
}

// DroppedMethod is the notification that replaces one that was too long
// to send: params {method, chars, limit}. ACP clients ignore methods
// starting with "_" they do not know.
const DroppedMethod = "_org.agentos/dropped"

func (s *RPCStream) pump() {
	for {
		line, err := s.lines.ReadLine()
		if err != nil {
			if errors.Is(err, io.EOF) {
				s.finish(nil)
				return
			}
			if errors.Is(err, ErrLineTooLong) {
				s.logger.Warn("closing connection: line over the limit")
			}
			s.finish(err)
			return
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		if reply := check(line); reply != nil {
			s.writeReply(reply)
			continue
		}
		// Copy: line is only valid until the next ReadLine, and the pipe
		// hands it over synchronously, but a newline must follow.
		msg := make([]byte, len(line)+1)
		copy(msg, line)
		msg[len(line)] = '\n'
		if _, err := s.pw.Write(msg); err != nil {
			// The engine stopped reading: the connection is over.
			s.finish(nil)
			return
		}
	}
}

func (s *RPCStream) writeReply(reply []byte) {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	if _, err := s.rw.Write(reply); err != nil {
		s.logger.Debug("error reply not written", "err", err)
	}
}

// check returns the error reply for a line the engine must not see, or nil.
func check(line []byte) []byte {
	if !json.Valid(line) {
		return errorReply(nil, -32700, "Parse error")
	}
	var probe struct {
		JSONRPC *string          `json:"jsonrpc"`
		ID      *json.RawMessage `json:"id"`
		Method  *json.RawMessage `json:"method"`
	}
	if err := json.Unmarshal(line, &probe); err != nil {
		// Valid JSON that is not an object (array, string, number…).
		return errorReply(nil, -32600, "Invalid request")
	}
	if probe.JSONRPC == nil || *probe.JSONRPC != "2.0" {
		return errorReply(validID(probe.ID), -32600, "Invalid request")
	}
	if probe.Method != nil {
		var m string
		if json.Unmarshal(*probe.Method, &m) != nil || m == "" {
			return errorReply(validID(probe.ID), -32600, "Invalid request")
		}
	}
	if id := probe.ID; id != nil && validID(id) == nil && !bytes.Equal(bytes.TrimSpace(*id), []byte("null")) {
		return errorReply(nil, -32600, "Invalid request")
	}
	return nil
}

// validID returns id when it is a JSON string or number, else nil.
func validID(id *json.RawMessage) json.RawMessage {
	if id == nil {
		return nil
	}
	b := bytes.TrimSpace(*id)
	if len(b) == 0 {
		return nil
	}
	switch c := b[0]; {
	case c == '"', c == '-', c >= '0' && c <= '9':
		return b
	}
	return nil
}

func errorReply(id json.RawMessage, code int, message string) []byte {
	return errcode.ErrorLine(id, errcode.Protocol(code, message))
}
