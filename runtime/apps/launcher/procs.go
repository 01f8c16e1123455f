package launcher

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/agentoslab/agentlab/runtime/apps"
	"github.com/agentoslab/agentlab/runtime/errcode"
	"github.com/agentoslab/agentlab/runtime/internal/faultinject"
	"github.com/agentoslab/agentlab/runtime/supervise/logfile"
	"github.com/agentoslab/agentlab/runtime/transport"
)

// Proc is a running service process.
type Proc struct {
	Package string `json:"package"`
	Server  string `json:"server"`
	PID     int    `json:"pid"`
	UID     int    `json:"uid"`
	// Socket is where it listens (ServiceSocket).
	Socket    string `json:"socket"`
	StartedAt int64  `json:"startedAt"` // unix ms
}

// EventKind says what an Event reports.
type EventKind string

const (
	EventStarted EventKind = "started"
	EventExited  EventKind = "exited"
	// EventPackage reports a change of the package table.
	EventPackage EventKind = "package"
)

// Event is what watchers receive.
type Event struct {
	Kind    EventKind `json:"kind"`
	Package string    `json:"package"`
	Server  string    `json:"server,omitempty"`
	PID     int       `json:"pid,omitempty"`
	UID     int       `json:"uid,omitempty"`
	// Status describes an exit ("exit status 3", "signal: killed").
	Status string `json:"status,omitempty"`
	// Requested says the exit followed a stop (not a crash).
	Requested bool `json:"requested,omitempty"`
	// Change is the package table's event (EventPackage).
	Change *apps.Event `json:"change,omitempty"`
	At     int64       `json:"at"`
}

type procKey struct{ pkg, server string }

type proc struct {
	Proc
	cmd     *exec.Cmd
	done    chan struct{} // closed when the process was reaped
	status  string        // set before done closes
	stopped bool          // a stop was requested; guarded by Server.mu
	log     *logfile.Writer
}

// ServiceSocket is where an app serves one of its services: an MCP
// server on transport.Names.App, an ACI service on transport.Names.ACI.
func ServiceSocket(names transport.Names, pkg string, svc apps.Service) string {
	if svc.Kind == apps.ServiceKindACI {
		return names.ACI(pkg, svc.Server)
	}
	return names.App(pkg, svc.Server)
}

// env is the environment of an app process.
func (s *Server) env(p apps.Package, socket string) []string {
	env := []string{
		"AGENTOS_APP_DATA=" + p.DataDir,
		"AGENTOS_PACKAGE=" + p.Name,
		"AGENTOS_RUNTIME_UID=" + strconv.Itoa(s.o.RuntimeUID),
		// A caller app's SDK dials this runtime's caller socket, prefix
		// included, from services and one-shot commands alike.
		"AGENTOS_CALLER_SOCKET=" + s.o.Names.Caller(),
		// Shared by every app uid: the simulated alarm clock and calendar
		// provider that stand in for Android's system services.
		"AGENTOS_SYSTEM_DATA=" + s.o.Installer.SystemDir(),
		"HOME=" + p.DataDir,
		"PATH=" + defaultPath,
	}
	if socket != "" {
		env = append(env, "AGENTOS_SOCKET="+socket)
	}
	return append(env, s.pass...)
}

func (s *Server) sysProcAttr(p apps.Package) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{
		Credential: &syscall.Credential{Uid: uint32(p.UID), Gid: uint32(p.UID), Groups: s.groups(p)},
		Setpgid:    true,
		// App processes never outlive the supervisor that started them.
		Pdeathsig: syscall.SIGKILL,
	}
}

// groups are the supplementary groups of p's processes: inet when p, or
// a package sharing its uid (Android grants a shared uid the union of its
// packages' permissions), declares network use; none otherwise.
func (s *Server) groups(p apps.Package) []uint32 {
	uses := p.UsesNetwork()
	if !uses && p.SharedUserID != "" {
		if ps, err := s.o.Installer.Packages(); err == nil {
			for _, q := range ps {
				uses = uses || (q.UID == p.UID && q.UsesNetwork())
			}
		}
	}
	if uses {
		return []uint32{apps.InetGID}
	}
	return []uint32{}
}

// StartService starts pkg's server (if not running) and returns once it
// listens on its socket as the package's uid.
func (s *Server) StartService(ctx context.Context, pkg, server string) (*Proc, error) {
	return s.startService(ctx, pkg, server, false)
}

// reaped reports whether pr's process has exited and been reaped.
func reaped(pr *proc) bool {
	select {
	case <-pr.done:
		return true
	default:
		return false
	}
}

// startService is StartService; retried is set on the one start made
// again after the process found exited.
func (s *Server) startService(ctx context.Context, pkg, server string, retried bool) (*Proc, error) {
	p, ok := s.lookup(pkg)
	if !ok {
		return nil, refusal(errcode.InvalidParams, "not_installed", "%s is not installed", clip(pkg))
	}
	svc, ok := p.Service(server)
	if !ok {
		return nil, refusal(errcode.InvalidParams, "no_such_service", "%s has no server %q", pkg, clip(server))
	}
	socket := ServiceSocket(s.o.Names, pkg, svc)
	if strings.HasPrefix(socket, "@") && len(socket) > socketNameLimit {
		return nil, refusal(errcode.InvalidParams, "name_too_long", "socket name %s is longer than %d bytes", socket, socketNameLimit)
	}
	key := procKey{pkg, server}

	// Starts are serialized (they are rare and quick; the wait for the
	// listener happens outside): a second start of the same server finds
	// the first one's process and waits for it like a second bind.
	s.startMu.Lock()
	s.mu.Lock()
	closed, cur := s.closed, s.procs[key]
	s.mu.Unlock()
	if closed {
		s.startMu.Unlock()
		return nil, refusal(errcode.Busy, "closing", "the launcher is stopping")
	}
	if cur != nil {
		s.startMu.Unlock()
		out, err := s.awaitListening(ctx, cur, p.UID)
		if err != nil && reaped(cur) && !retried {
			// The process found was already on its way out (a provider
			// that just died and is not reaped yet): the bind starts a
			// new one, as Android restarts a dead service on bind.
			return s.startService(ctx, pkg, server, true)
		}
		return out, err
	}
	// A listener nobody started (a leftover or a squatter) would take the
	// app's calls: refuse rather than start a second server.
	if uid, ok := listenerUID(ctx, socket); ok {
		s.startMu.Unlock()
		if faultinject.Enabled && faultinject.Active(faultinject.ProviderPeerUIDUnchecked) {
			return &Proc{Package: pkg, Server: server, UID: uid, Socket: socket, StartedAt: time.Now().UnixMilli()}, nil
		}
		return nil, refusal(errcode.ToolUnavailable, "socket_taken", "%s is already held by uid %d", socket, uid)
	}
	pr, err := s.spawn(p, server, socket)
	s.startMu.Unlock()
	if err != nil {
		return nil, err
	}
	s.logger.Info("launcher: started", "package", pkg, "server", server, "pid", pr.PID, "uid", p.UID)
	s.publish(Event{Kind: EventStarted, Package: pkg, Server: server, PID: pr.PID, UID: p.UID, At: time.Now().UnixMilli()})
	return s.awaitListening(ctx, pr, p.UID)
}

// spawn starts the process and records it; called with s.startMu held.
func (s *Server) spawn(p apps.Package, server, socket string) (*proc, error) {
	logw, err := logfile.Open(p.DataDir, LogName(server), &logfile.Options{MaxBytes: s.o.LogMaxBytes, UID: p.UID, GID: p.UID})
	if err != nil {
		return nil, refusal(errcode.ToolUnavailable, "spawn_failed", "cannot open the log of %s: %v", p.Name, err)
	}
	rd, wr, err := os.Pipe()
	if err != nil {
		logw.Close()
		return nil, refusal(errcode.ToolUnavailable, "spawn_failed", "pipe: %v", err)
	}
	cmd := exec.Command(p.BinaryPath(), "serve", "--server", server)
	cmd.Env = s.env(p, socket)
	cmd.Dir = p.DataDir
	cmd.Stdout, cmd.Stderr = wr, wr
	cmd.SysProcAttr = s.sysProcAttr(p)
	if err := cmd.Start(); err != nil {
		rd.Close()
		wr.Close()
		logw.Close()
		return nil, refusal(errcode.ToolUnavailable, "spawn_failed", "cannot start %s: %v", p.Name, err)
	}
	wr.Close()
	pr := &proc{
		Proc: Proc{Package: p.Name, Server: server, PID: cmd.Process.Pid, UID: p.UID, Socket: socket, StartedAt: time.Now().UnixMilli()},
		cmd:  cmd, done: make(chan struct{}), log: logw,
	}
	s.mu.Lock()
	s.procs[procKey{p.Name, server}] = pr
	if s.closed {
		// Close ran while this process started: it is not in its list.
		pr.stopped = true
		syscall.Kill(-pr.PID, syscall.SIGKILL)
	}
	s.mu.Unlock()
	copied := make(chan struct{})
	s.wg.Add(2)
	go func() {
		defer s.wg.Done()
		defer close(copied)
		buf := make([]byte, 32<<10)
		for {
			n, err := rd.Read(buf)
			if n > 0 {
				logw.Write(buf[:n])
			}
			if err != nil {
				rd.Close()
				return
			}
		}
	}()
	go func() {
		defer s.wg.Done()
		err := cmd.Wait()
		status := "exit status 0"
		if err != nil {
			status = err.Error()
		}
		// Children the app left in its group go with it.
		syscall.Kill(-pr.PID, syscall.SIGKILL)
		select {
		case <-copied:
		case <-time.After(2 * time.Second):
			rd.Close()
		}
		logw.Close()
		s.mu.Lock()
		pr.status = status
		requested := pr.stopped
		if s.procs[procKey{pr.Package, pr.Server}] == pr {
			delete(s.procs, procKey{pr.Package, pr.Server})
		}
		s.mu.Unlock()
		s.logger.Info("launcher: exited", "package", pr.Package, "server", pr.Server, "pid", pr.PID, "status", status, "requested", requested)
		// Published before done closes, so whoever waited for the exit
		// (an upgrade) reports after it.
		s.publish(Event{Kind: EventExited, Package: pr.Package, Server: pr.Server, PID: pr.PID, UID: pr.UID, Status: status, Requested: requested, At: time.Now().UnixMilli()})
		close(pr.done)
	}()
	return pr, nil
}

// awaitListening polls the app's socket until its listener answers as
// uid, the process exits, the start timeout passes or ctx ends.
func (s *Server) awaitListening(ctx context.Context, pr *proc, uid int) (*Proc, error) {
	deadline := time.NewTimer(s.o.StartTimeout)
	defer deadline.Stop()
	wait := 10 * time.Millisecond
	for {
		if got, ok := listenerUID(ctx, pr.Socket); ok {
			if got != uid && !(faultinject.Enabled && faultinject.Active(faultinject.ProviderPeerUIDUnchecked)) {
				s.stopProc(pr)
				return nil, refusal(errcode.ToolUnavailable, "socket_taken", "%s is held by uid %d, not the app's uid %d", pr.Socket, got, uid)
			}
			out := pr.Proc
			return &out, nil
		}
		select {
		case <-pr.done:
			return nil, refusal(errcode.ToolUnavailable, "exited", "%s server %s exited before listening (%s); its output is in %s",
				pr.Package, pr.Server, pr.status, LogName(pr.Server))
		case <-deadline.C:
			s.stopProc(pr)
			return nil, refusal(errcode.ToolUnavailable, "not_listening", "%s server %s did not listen on %s within %s",
				pr.Package, pr.Server, pr.Socket, s.o.StartTimeout)
		case <-ctx.Done():
			return nil, errcode.Wrap(errcode.ToolUnavailable, "the start was cancelled", ctx.Err())
		case <-time.After(wait):
		}
		wait = min(wait*2, 100*time.Millisecond)
	}
}

// listenerUID dials socket and returns the listener's uid.
func listenerUID(ctx context.Context, socket string) (int, bool) {
	dctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	c, err := transport.Dial(dctx, socket)
	if err != nil {
		return 0, false
	}
	defer c.Close()
	cred, err := transport.PeerCred(c)
	if err != nil {
		return 0, false
	}
	return cred.UID, true
}

// StopService stops pkg's server (every server when server is "") and
// returns how many processes it stopped.
func (s *Server) StopService(pkg, server string) int {
	s.mu.Lock()
	var ps []*proc
	for k, p := range s.procs {
		if k.pkg == pkg && (server == "" || k.server == server) {
			ps = append(ps, p)
		}
	}
	s.mu.Unlock()
	for _, p := range ps {
		s.stopProc(p)
	}
	return len(ps)
}

// stopProc sends SIGTERM to the process group, SIGKILL after the grace
// period, and waits until the process was reaped.
func (s *Server) stopProc(p *proc) {
	s.mu.Lock()
	p.stopped = true
	s.mu.Unlock()
	select {
	case <-p.done:
		return
	default:
	}
	syscall.Kill(-p.PID, syscall.SIGTERM)
	select {
	case <-p.done:
		return
	case <-time.After(s.o.StopGrace):
	}
	syscall.Kill(-p.PID, syscall.SIGKILL)
	<-p.done
}

// List returns the running processes sorted by package and server.
func (s *Server) List() []Proc {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Proc, 0, len(s.procs))
	for _, p := range s.procs {
		out = append(out, p.Proc)
	}
	slices.SortFunc(out, func(a, b Proc) int {
		return strings.Compare(a.Package+"\x00"+a.Server, b.Package+"\x00"+b.Server)
	})
	return out
}

// watcher is one watch connection.
type watcher struct {
	c      net.Conn
	events chan Event
	gone   chan struct{}
	once   func()
}

func (w *watcher) close() { w.once() }

func (s *Server) watch(ctx context.Context, c net.Conn, id json.RawMessage) {
	w := &watcher{c: c, events: make(chan Event, watcherQueue), gone: make(chan struct{})}
	closed := false
	w.once = func() {
		if !closed {
			closed = true
			close(w.gone)
		}
	}
	s.mu.Lock()
	s.watchers[w] = struct{}{}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.watchers, w)
		w.close()
		s.mu.Unlock()
	}()
	if writeResp(c, response{ID: id, Result: json.RawMessage("{}")}) != nil {
		return
	}
	// The peer never writes again; its close ends the watch.
	peerGone := make(chan struct{})
	go func() {
		var b [1]byte
		c.Read(b[:])
		close(peerGone)
	}()
	defer func() {
		c.Close()
		<-peerGone
	}()
	for {
		select {
		case ev := <-w.events:
			if writeResp(c, response{ID: json.RawMessage("null"), Event: &ev}) != nil {
				return
			}
		case <-w.gone:
			return
		case <-peerGone:
			return
		case <-ctx.Done():
			return
		}
	}
}

// publish hands ev to every watcher; a watcher too slow to keep up is
// disconnected (it reconnects and lists) rather than blocking launches.
func (s *Server) publish(ev Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for w := range s.watchers {
		select {
		case w.events <- ev:
		default:
			s.logger.Warn("launcher: watcher too slow; disconnected")
			w.close()
			delete(s.watchers, w)
		}
	}
}

// exitCode returns a process state's exit code, 128+signal for a
// signal death (the shell's convention).
func exitCode(st *os.ProcessState) int {
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return st.ExitCode()
}
