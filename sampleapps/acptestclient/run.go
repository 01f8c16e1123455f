package acptestclient

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/agentoslab/agentlab/runtime/sdk/acpclient"
	"github.com/agentoslab/agentlab/runtime/transport"
)

// Env is what a run takes from its process.
type Env struct {
	// CallerSocket is the runtime's caller socket
	// ($AGENTOS_CALLER_SOCKET); "" means transport.Names{}.Caller(). The
	// admin and desktop sockets of dial are named after it.
	CallerSocket string
	// Logger receives diagnostics (never prompts or results); nil
	// discards.
	Logger *slog.Logger
}

// Output is the document run prints.
type Output struct {
	// OK is false only when the plan could not be read: refusals and
	// failures of the runtime are outcomes, recorded in the results.
	OK bool `json:"ok"`
	// R holds each operation's result under its name (as).
	R map[string]any `json:"r"`
	// Steps list the operations in the order they ran.
	Steps []StepOut `json:"steps"`
	// Error is the plan's problem when OK is false.
	Error string `json:"error,omitempty"`
}

// StepOut is one operation as it ran.
type StepOut struct {
	Op        string    `json:"op"`
	As        string    `json:"as"`
	ElapsedMs int64     `json:"elapsedMs"`
	Error     *ErrorOut `json:"error"`
}

// ErrorOut is an error of the SDK or the runtime, as checks read it.
type ErrorOut struct {
	// Code is the SDK's class (DENIED, BUSY, SESSION_NOT_FOUND …) or
	// FAILED / PLAN for errors of this app.
	Code              string `json:"code"`
	AgentosCode       string `json:"agentosCode,omitempty"`
	Reason            string `json:"reason,omitempty"`
	Message           string `json:"message"`
	RetryAfterSeconds int    `json:"retryAfterSeconds,omitempty"`
	RequestID         string `json:"requestId,omitempty"`
	TaskID            string `json:"taskId,omitempty"`
}

func errOut(err error) *ErrorOut {
	if err == nil {
		return nil
	}
	var e *acpclient.Error
	if errors.As(err, &e) {
		return &ErrorOut{Code: string(e.Code), AgentosCode: e.AgentosCode, Reason: e.Reason, Message: e.Message,
			RetryAfterSeconds: e.RetryAfterSeconds, RequestID: e.RequestID, TaskID: e.TaskID}
	}
	var re *resultError
	if errors.As(err, &re) {
		c := *re.e
		return &c
	}
	var pe *planError
	if errors.As(err, &pe) {
		return &ErrorOut{Code: "PLAN", Message: pe.msg}
	}
	return &ErrorOut{Code: string(acpclient.Failed), Message: err.Error()}
}

// planError is a reference the plan cannot resolve at run time.
type planError struct{ msg string }

func (e *planError) Error() string { return e.msg }

func planErrorf(format string, args ...any) error { return &planError{fmt.Sprintf(format, args...)} }

// runner is one run of a plan.
type runner struct {
	env Env
	log *slog.Logger

	conns    map[string]*acpclient.Conn
	lastConn string
	sessions map[string]*acpclient.Session // by as and by id
	raws     map[string]*rawConn
	lastRaw  string
	// secrets are the codes and tokens raw answers carried, by
	// "<as>.<key>"; outputs show them redacted (see secret.go).
	secrets map[string]string

	mu      sync.Mutex // guards results (background prompts write theirs)
	results map[string]any
	bg      map[string]*background
	wg      sync.WaitGroup

	clockSeq int // wait_clock's request ids
}

// background is a prompt running while the plan goes on.
type background struct {
	done    chan struct{}
	res     *PromptOut    // set before done is closed
	changed chan struct{} // capacity 1: text arrived

	mu   sync.Mutex // guards text
	text strings.Builder
}

// Run performs ops in order and returns every outcome. It returns when
// every operation ran; prompts left in the background end when their
// connections are closed at the end.
func Run(ctx context.Context, env Env, ops []Op) Output {
	if env.CallerSocket == "" {
		env.CallerSocket = transport.Names{}.Caller()
	}
	r := &runner{env: env, log: env.Logger, conns: map[string]*acpclient.Conn{}, sessions: map[string]*acpclient.Session{},
		raws: map[string]*rawConn{}, secrets: map[string]string{}, results: map[string]any{}, bg: map[string]*background{}}
	if r.log == nil {
		r.log = slog.New(slog.DiscardHandler)
	}
	out := Output{OK: true}
	for i := range ops {
		op := &ops[i]
		start := time.Now()
		res, err := r.do(ctx, op)
		st := StepOut{Op: op.Op, As: op.As, ElapsedMs: time.Since(start).Milliseconds(), Error: errOut(err)}
		if res == nil {
			res = &Outcome{}
		}
		// await puts the prompt's own result under the prompt's name.
		if op.Op != OpAwait {
			if o, ok := res.(interface{ setCommon(int64, *ErrorOut) }); ok {
				o.setCommon(st.ElapsedMs, st.Error)
			}
			r.setResult(op.As, res)
		}
		out.Steps = append(out.Steps, st)
	}
	r.finish()
	r.mu.Lock()
	out.R = r.results
	r.mu.Unlock()
	return out
}

func (r *runner) setResult(name string, v any) {
	r.mu.Lock()
	r.results[name] = v
	r.mu.Unlock()
}

// finish closes what the plan left open and waits for background prompts.
func (r *runner) finish() {
	for _, c := range r.conns {
		c.Close()
	}
	for _, rc := range r.raws {
		rc.close()
	}
	r.wg.Wait()
}

// Outcome is the result of operations with nothing more to say.
type Outcome struct {
	ElapsedMs int64     `json:"elapsedMs"`
	Error     *ErrorOut `json:"error"`
}

func (o *Outcome) setCommon(ms int64, e *ErrorOut) { o.ElapsedMs, o.Error = ms, e }

func (r *runner) do(ctx context.Context, op *Op) (any, error) {
	switch op.Op {
	case OpConnect:
		return r.connect(ctx, op)
	case OpDisconnect:
		c, name, err := r.conn(op)
		if err != nil {
			return nil, err
		}
		delete(r.conns, name)
		return &Outcome{}, c.Close()
	case OpWaitClosed:
		return r.waitClosed(ctx, op)
	case OpNew, OpFork, OpLoad, OpResume:
		return r.establish(ctx, op)
	case OpList:
		return r.list(ctx, op)
	case OpDelete:
		c, _, err := r.conn(op)
		if err != nil {
			return nil, err
		}
		return &Outcome{}, c.DeleteSession(ctx, r.sessionID(op.ID))
	case OpClose:
		s, err := r.session(op.Session)
		if err != nil {
			return nil, err
		}
		return &Outcome{}, s.Close(ctx)
	case OpSetMode:
		s, err := r.session(op.Session)
		if err != nil {
			return nil, err
		}
		return &Outcome{}, s.SetMode(ctx, op.Mode)
	case OpSetModel:
		s, err := r.session(op.Session)
		if err != nil {
			return nil, err
		}
		return &Outcome{}, s.SetModel(ctx, op.Model)
	case OpPrompt:
		return r.prompt(ctx, op)
	case OpCancel:
		s, err := r.session(op.Session)
		if err != nil {
			return nil, err
		}
		return &Outcome{}, s.Cancel(ctx)
	case OpAwait:
		return r.await(ctx, op)
	case OpWaitText:
		return r.waitText(ctx, op)
	case OpRawOpen:
		return r.rawOpen(ctx, op)
	case OpRawConnect:
		return r.rawConnect(ctx, op)
	case OpRaw:
		return r.raw(ctx, op)
	case OpRawRead:
		return r.rawRead(ctx, op)
	case OpRawClose:
		rc, name, err := r.rawConnOf(op)
		if err != nil {
			return nil, err
		}
		delete(r.raws, name)
		rc.close()
		return &Outcome{}, nil
	case OpDial:
		return r.dial(ctx, op)
	case OpWaitClock:
		return r.waitClock(ctx, op)
	case OpSleep:
		t := time.NewTimer(time.Duration(op.Ms) * time.Millisecond)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return &Outcome{}, nil
	}
	return nil, planErrorf("unknown op %q", op.Op)
}

// ConnectOut is connect's result.
type ConnectOut struct {
	Connected bool `json:"connected"`
	// Waits are the SDK's Waiting callbacks while the owner had not
	// answered.
	Waits        []WaitOut     `json:"waits"`
	Capabilities *Capabilities `json:"capabilities,omitempty"`
	Outcome
}

// WaitOut is one Waiting callback.
type WaitOut struct {
	RequestID string `json:"requestId"`
	WaitedMs  int64  `json:"waitedMs"`
}

// Capabilities are what initialize declared.
type Capabilities struct {
	ProtocolVersion int      `json:"protocolVersion"`
	AgentName       string   `json:"agentName"`
	AgentVersion    string   `json:"agentVersion"`
	LoadSession     bool     `json:"loadSession"`
	Fork            bool     `json:"fork"`
	List            bool     `json:"list"`
	Resume          bool     `json:"resume"`
	Delete          bool     `json:"delete"`
	Close           bool     `json:"close"`
	MCPHTTP         bool     `json:"mcpHttp"`
	Extensions      []string `json:"extensions"`
}

func (r *runner) connect(ctx context.Context, op *Op) (any, error) {
	out := &ConnectOut{Waits: []WaitOut{}}
	var mu sync.Mutex
	o := &acpclient.Options{SocketName: r.env.CallerSocket, ClientName: op.ClientName, ClientVersion: op.ClientVersion,
		RetryInterval: time.Duration(op.RetryMs) * time.Millisecond, MaxWait: time.Duration(op.MaxWaitMs) * time.Millisecond,
		Logger: r.log,
		OnWaiting: func(id string, waited time.Duration) {
			mu.Lock()
			out.Waits = append(out.Waits, WaitOut{RequestID: id, WaitedMs: waited.Milliseconds()})
			mu.Unlock()
		}}
	c, err := acpclient.Connect(ctx, o)
	if err != nil {
		return out, err
	}
	r.conns[op.As] = c
	r.lastConn = op.As
	caps := c.Capabilities()
	out.Connected = true
	out.Capabilities = &Capabilities{ProtocolVersion: caps.ProtocolVersion, AgentName: caps.AgentName, AgentVersion: caps.AgentVersion,
		LoadSession: caps.LoadSession, Fork: caps.Fork, List: caps.List, Resume: caps.Resume, Delete: caps.Delete, Close: caps.Close,
		MCPHTTP: caps.MCPHTTP, Extensions: caps.Extensions}
	if out.Capabilities.Extensions == nil {
		out.Capabilities.Extensions = []string{}
	}
	return out, nil
}

func (r *runner) conn(op *Op) (*acpclient.Conn, string, error) {
	name := op.Conn
	if name == "" {
		name = r.lastConn
	}
	c, ok := r.conns[name]
	if !ok {
		return nil, name, planErrorf("no open connection %q", name)
	}
	return c, name, nil
}

// ClosedOut is wait_closed's result.
type ClosedOut struct {
	Closed bool `json:"closed"`
	Outcome
}

func (r *runner) waitClosed(ctx context.Context, op *Op) (any, error) {
	c, _, err := r.conn(op)
	if err != nil {
		return nil, err
	}
	d := time.Duration(op.TimeoutMs) * time.Millisecond
	if d == 0 {
		d = 10 * time.Second
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-c.Done():
		return &ClosedOut{Closed: true}, nil
	case <-t.C:
		return &ClosedOut{}, nil
	case <-ctx.Done():
		return &ClosedOut{}, ctx.Err()
	}
}

// SessionOut is the result of new, fork, load and resume.
type SessionOut struct {
	SessionID  string                   `json:"sessionId"`
	Mode       string                   `json:"mode"`
	Modes      []string                 `json:"modes"`
	Model      string                   `json:"model"`
	Models     []string                 `json:"models"`
	MCPServers []acpclient.ServerStatus `json:"mcpServers"`
	ActiveTask *ActiveTask              `json:"activeTask"`
	// History is what load replayed; HistoryText its text (user and
	// agent messages, one per line, prefixed "user: " / "agent: ").
	History     []EventOut `json:"history"`
	HistoryText string     `json:"historyText"`
	Outcome
}

// ActiveTask is a session's unfinished task.
type ActiveTask struct {
	TaskID string `json:"taskId"`
	State  string `json:"state"`
}

func (r *runner) establish(ctx context.Context, op *Op) (any, error) {
	c, _, err := r.conn(op)
	if err != nil {
		return nil, err
	}
	servers := make([]acpclient.MCPServer, 0, len(op.MCPServers))
	for _, s := range op.MCPServers {
		m := acpclient.MCPServer{Name: s.Name, URL: s.URL}
		for _, h := range s.Headers {
			m.Headers = append(m.Headers, acpclient.Header{Name: h.Name, Value: h.Value})
		}
		servers = append(servers, m)
	}
	var scope []acpclient.ToolRef
	if op.Scope != nil {
		scope = append([]acpclient.ToolRef{}, (*op.Scope)...)
	}
	var s *acpclient.Session
	switch op.Op {
	case OpNew:
		s, err = c.NewSession(ctx, acpclient.SessionOptions{ToolScope: scope, MCPServers: servers, Cwd: op.Cwd})
	case OpFork:
		s, err = c.ForkSession(ctx, r.sessionID(op.ID), acpclient.SessionOptions{ToolScope: scope, MCPServers: servers, Cwd: op.Cwd})
	case OpLoad:
		s, err = c.LoadSession(ctx, r.sessionID(op.ID), acpclient.LoadOptions{MCPServers: servers, Cwd: op.Cwd})
	case OpResume:
		s, err = c.ResumeSession(ctx, r.sessionID(op.ID), acpclient.LoadOptions{MCPServers: servers, Cwd: op.Cwd})
	}
	if err != nil {
		return &SessionOut{Modes: []string{}, Models: []string{}, MCPServers: []acpclient.ServerStatus{}, History: []EventOut{}}, err
	}
	r.sessions[op.As] = s
	r.sessions[s.ID()] = s
	return sessionOut(s), nil
}

func sessionOut(s *acpclient.Session) *SessionOut {
	out := &SessionOut{SessionID: s.ID(), Mode: s.Mode(), Modes: s.AvailableModes(), Model: s.Model(), Models: s.AvailableModels(),
		MCPServers: s.MCPServers(), History: []EventOut{}}
	if out.Modes == nil {
		out.Modes = []string{}
	}
	if out.Models == nil {
		out.Models = []string{}
	}
	if out.MCPServers == nil {
		out.MCPServers = []acpclient.ServerStatus{}
	}
	if id, state, ok := s.ActiveTask(); ok {
		out.ActiveTask = &ActiveTask{TaskID: id, State: state}
	}
	var text strings.Builder
	for _, ev := range s.History() {
		e := eventOut(ev)
		out.History = append(out.History, e)
		switch e.Type {
		case "user":
			text.WriteString("user: " + e.Text + "\n")
		case "text":
			text.WriteString("agent: " + e.Text + "\n")
		}
	}
	out.HistoryText = text.String()
	return out
}

// EventOut is one event of a prompt or a replayed history.
type EventOut struct {
	// Type is text, thought, user, tool or done.
	Type       string `json:"type"`
	Text       string `json:"text,omitempty"`
	ID         string `json:"id,omitempty"`
	Tool       string `json:"tool,omitempty"`
	Status     string `json:"status,omitempty"`
	Result     string `json:"result,omitempty"`
	Arguments  string `json:"arguments,omitempty"`
	Ref        string `json:"ref,omitempty"`
	StopReason string `json:"stopReason,omitempty"`
}

func eventOut(ev acpclient.Event) EventOut {
	switch e := ev.(type) {
	case acpclient.Text:
		return EventOut{Type: "text", Text: e.Text}
	case acpclient.Thought:
		return EventOut{Type: "thought", Text: e.Text}
	case acpclient.UserMessage:
		return EventOut{Type: "user", Text: e.Text}
	case acpclient.ToolCall:
		out := EventOut{Type: "tool", ID: e.ID, Tool: e.Tool, Status: string(e.Status), Result: e.ResultJSON, Arguments: e.ArgumentsJSON}
		if e.Ref != nil {
			out.Ref = e.Ref.String()
		}
		return out
	case acpclient.Done:
		return EventOut{Type: "done", StopReason: e.StopReason}
	}
	return EventOut{Type: fmt.Sprintf("%T", ev)}
}

// sessionID resolves a session of this plan (its as) to its id; any
// other value is taken as an id.
func (r *runner) sessionID(ref string) string {
	if s, ok := r.sessions[ref]; ok {
		return s.ID()
	}
	return ref
}

func (r *runner) session(ref string) (*acpclient.Session, error) {
	if s, ok := r.sessions[ref]; ok {
		return s, nil
	}
	return nil, planErrorf("no session %q in this plan (a foreign id needs load first)", ref)
}

// ListOut is list's result.
type ListOut struct {
	Sessions []SessionInfo `json:"sessions"`
	Outcome
}

// SessionInfo is one listed session.
type SessionInfo struct {
	SessionID string `json:"sessionId"`
	Cwd       string `json:"cwd"`
	Title     string `json:"title"`
	UpdatedAt string `json:"updatedAt"`
}

func (r *runner) list(ctx context.Context, op *Op) (any, error) {
	c, _, err := r.conn(op)
	if err != nil {
		return nil, err
	}
	out := &ListOut{Sessions: []SessionInfo{}}
	infos, err := c.ListSessions(ctx, op.Cwd)
	for _, in := range infos {
		si := SessionInfo{SessionID: in.ID, Cwd: in.Cwd, Title: in.Title}
		if !in.UpdatedAt.IsZero() {
			si.UpdatedAt = in.UpdatedAt.UTC().Format(time.RFC3339Nano)
		}
		out.Sessions = append(out.Sessions, si)
	}
	return out, err
}
