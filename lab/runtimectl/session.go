package runtimectl

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/agentoslab/agentlab/devices"
	"github.com/agentoslab/agentlab/runtime/admin"
)

// rootStreamer is a device that can hold a root command on one raw
// stream (devices/adb.Device). The client keeps `agentosd ctl --lines`
// running on such streams, so a call costs a round trip instead of an adb
// shell, su and a process start (20–50 ms each on a device); other
// devices run one ctl process per call.
type rootStreamer interface {
	SuStream(ctx context.Context, cmd string) (net.Conn, error)
}

// maxIdleSessions bounds the streams kept open between calls: the lab's
// steps rarely run more than a few calls on one device at once.
const maxIdleSessions = 4

// sessionIdle is how long an unused session stays open: a client nobody
// closes (a provisioning pass) leaves no root process behind for long.
const sessionIdle = 10 * time.Second

// session is one `agentosd ctl --lines` process on the device.
type session struct {
	conn net.Conn
	r    *bufio.Reader
	idle *time.Timer // closes the session when it stays idle
}

// errNoLines: the device's agentosd did not answer on a fresh session
// (an older runtime without --lines, or none installed): nothing ran, so
// the call may take the one-shot path.
var errNoLines = errors.New("agentosd ctl --lines did not answer")

// errNotSent: the request never left (the stream was already closed), so
// nothing ran and the call may go another way.
var errNotSent = errors.New("ctl session: request not sent")

// sessions is the client's pool of ctl sessions.
type sessions struct {
	dev    rootStreamer // nil: one-shot calls only
	cmd    string
	mu     sync.Mutex
	idle   []*session
	off    bool // --lines is not there, or the client was closed
	worked bool // a session answered once: --lines is there
}

// call runs one ctl request on a session. ok is false when the call must
// take the one-shot path instead (no session could answer; nothing ran).
func (p *sessions) call(ctx context.Context, args []string, stdin []byte) (res devices.Result, ok bool, err error) {
	s, fresh, err := p.take(ctx)
	if err != nil {
		return devices.Result{}, false, nil
	}
	res, err = s.roundTrip(ctx, args, stdin)
	switch {
	case err == nil:
		p.put(s)
		return res, true, nil
	case (errors.Is(err, errNotSent) || errors.Is(err, errNoLines)) && fresh && !p.answered():
		// A new session that ends before any answer: this agentosd has
		// no --lines (or is not installed), so nothing ran.
		s.conn.Close()
		p.disable()
		return devices.Result{}, false, nil
	case errors.Is(err, errNotSent):
		s.conn.Close()
		return devices.Result{}, false, nil
	case errors.Is(err, errNoLines):
		s.conn.Close()
		return devices.Result{}, true, errors.New("the device ended the ctl session without an answer (the call may have run)")
	}
	s.conn.Close()
	return devices.Result{}, true, err
}

// take returns a live idle session, or opens one (fresh).
func (p *sessions) take(ctx context.Context) (s *session, fresh bool, err error) {
	p.mu.Lock()
	if p.dev == nil || p.off {
		p.mu.Unlock()
		return nil, false, errNoLines
	}
	for len(p.idle) > 0 {
		s = p.idle[len(p.idle)-1]
		p.idle = p.idle[:len(p.idle)-1]
		if !s.idle.Stop() {
			continue // its idle timer closed it
		}
		if s.alive() {
			p.mu.Unlock()
			return s, false, nil
		}
		s.conn.Close()
	}
	p.mu.Unlock()
	conn, err := p.dev.SuStream(ctx, p.cmd)
	if err != nil {
		return nil, false, err
	}
	return &session{conn: conn, r: bufio.NewReaderSize(conn, 64<<10)}, true, nil
}

// answered reports whether any session has answered: from then on a
// session that dies mid-call is an error, never a reason to run the call
// again one-shot (it may have run).
func (p *sessions) answered() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.worked
}

// put keeps s for the next call.
func (p *sessions) put(s *session) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.worked = true
	if p.off || len(p.idle) >= maxIdleSessions {
		s.conn.Close()
		return
	}
	s.idle = time.AfterFunc(sessionIdle, func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		for i, x := range p.idle {
			if x == s {
				p.idle = append(p.idle[:i], p.idle[i+1:]...)
				break
			}
		}
		s.conn.Close()
	})
	p.idle = append(p.idle, s)
}

// disable sends every later call down the one-shot path.
func (p *sessions) disable() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.off = true
	for _, s := range p.idle {
		s.idle.Stop()
		s.conn.Close()
	}
	p.idle = nil
}

// alive reports whether an idle session's stream is still open: a device
// that rebooted or went away while the session idled has closed it, and
// the read sees that at once.
func (s *session) alive() bool {
	s.conn.SetReadDeadline(time.Now())
	_, err := s.r.Peek(1)
	s.conn.SetReadDeadline(time.Time{})
	// Nothing to read and no EOF: open. A byte nobody asked for means the
	// stream is out of step; drop it too.
	return errors.Is(err, os.ErrDeadlineExceeded)
}

// roundTrip sends one request and reads its answer, bounded by ctx.
func (s *session) roundTrip(ctx context.Context, args []string, stdin []byte) (devices.Result, error) {
	line, err := json.Marshal(admin.LinesRequest{Args: args, Stdin: string(stdin)})
	if err != nil {
		return devices.Result{}, err
	}
	stop := context.AfterFunc(ctx, func() { s.conn.SetDeadline(time.Now()) })
	defer stop()
	if _, err := s.conn.Write(append(line, '\n')); err != nil {
		if ctx.Err() != nil {
			return devices.Result{}, ctxErr(ctx, fmt.Errorf("ctl session: send: %w", err))
		}
		return devices.Result{}, fmt.Errorf("%w: %w", errNotSent, err)
	}
	ans, err := s.r.ReadBytes('\n')
	if err != nil {
		if len(ans) == 0 && errors.Is(err, io.EOF) {
			return devices.Result{}, errNoLines
		}
		return devices.Result{}, ctxErr(ctx, fmt.Errorf("ctl session: read: %w", err))
	}
	var r admin.LinesResponse
	if err := json.Unmarshal(ans, &r); err != nil {
		// Not an answer: something else speaks on the stream (a shell
		// message about a missing binary or flag).
		return devices.Result{}, fmt.Errorf("%w: %q", errNoLines, strings.TrimSpace(firstLine(string(ans))))
	}
	return devices.Result{Stdout: []byte(r.Stdout), Stderr: []byte(r.Stderr), ExitCode: r.Exit}, nil
}

// ctxErr prefers ctx's error when ctx ended the call.
func ctxErr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("%w (%w)", ctx.Err(), err)
	}
	return err
}
