package callerchan_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"time"

	"github.com/agentoslab/agentlab/runtime/sdk/acpclient"
	"github.com/agentoslab/agentlab/runtime/transport"
)

// The app helper: a process under an app uid that drives the caller SDK
// by commands, one JSON object per line on stdin, one reply per line on
// stdout.

type helperWait struct {
	RequestID string `json:"requestId"`
	WaitedMs  int64  `json:"waitedMs"`
}

type helperErr struct {
	Code        string `json:"code"`
	AgentosCode string `json:"agentosCode"`
	Reason      string `json:"reason"`
	RequestID   string `json:"requestId"`
	Message     string `json:"message"`
}

type helperEvent struct {
	Type       string `json:"type"`
	Text       string `json:"text,omitempty"`
	ID         string `json:"id,omitempty"`
	Tool       string `json:"tool,omitempty"`
	Status     string `json:"status,omitempty"`
	Ref        string `json:"ref,omitempty"`
	Result     string `json:"result,omitempty"`
	StopReason string `json:"stopReason,omitempty"`
}

type helperSession struct {
	ID    string `json:"id"`
	Title string `json:"title"`
}

type helperReply struct {
	Err       *helperErr               `json:"err,omitempty"`
	Waits     []helperWait             `json:"waits,omitempty"`
	ElapsedMs int64                    `json:"elapsedMs"`
	Session   string                   `json:"session,omitempty"`
	Servers   []acpclient.ServerStatus `json:"servers,omitempty"`
	Mode      string                   `json:"mode,omitempty"`
	Models    []string                 `json:"models,omitempty"`
	Events    []helperEvent            `json:"events,omitempty"`
	History   []helperEvent            `json:"history,omitempty"`
	Sessions  []helperSession          `json:"sessions,omitempty"`
	Line      string                   `json:"line,omitempty"`
	Closed    bool                     `json:"closed,omitempty"`
}

type helperCmd struct {
	Op        string                `json:"op"`
	MaxWaitMs int                   `json:"maxWaitMs"`
	RetryMs   int                   `json:"retryMs"`
	Scope     *[]acpclient.ToolRef  `json:"scope"`
	Servers   []acpclient.MCPServer `json:"servers"`
	Session   string                `json:"session"`
	Text      string                `json:"text"`
	Thoughts  bool                  `json:"thoughts"`
	Mode      string                `json:"mode"`
	Model     string                `json:"model"`
	Socket    string                `json:"socket"`
	Cwd       string                `json:"cwd"`
}

func toHelperErr(err error) *helperErr {
	if err == nil {
		return nil
	}
	var e *acpclient.Error
	if errors.As(err, &e) {
		return &helperErr{Code: string(e.Code), AgentosCode: e.AgentosCode, Reason: e.Reason, RequestID: e.RequestID, Message: e.Message}
	}
	return &helperErr{Code: "GO", Message: err.Error()}
}

func toHelperEvent(ev acpclient.Event) helperEvent {
	switch e := ev.(type) {
	case acpclient.Text:
		return helperEvent{Type: "text", Text: e.Text}
	case acpclient.Thought:
		return helperEvent{Type: "thought", Text: e.Text}
	case acpclient.UserMessage:
		return helperEvent{Type: "user", Text: e.Text}
	case acpclient.ToolCall:
		h := helperEvent{Type: "tool", ID: e.ID, Tool: e.Tool, Status: string(e.Status), Result: e.ResultJSON}
		if e.Ref != nil {
			h.Ref = e.Ref.String()
		}
		return h
	case acpclient.Done:
		return helperEvent{Type: "done", StopReason: e.StopReason}
	}
	return helperEvent{Type: "?"}
}

func runHelper(stdin io.Reader, stdout io.Writer) int {
	ctx := context.Background()
	socket := os.Getenv("HELPER_SOCKET")
	var conn *acpclient.Conn
	sessions := map[string]*acpclient.Session{}
	var async struct {
		sync.Mutex
		done  chan struct{}
		reply helperReply
	}
	prompt := func(s *acpclient.Session, text string, thoughts bool) helperReply {
		var r helperReply
		for ev, err := range s.Prompt(ctx, text, acpclient.PromptOptions{IncludeThoughts: thoughts}) {
			if err != nil {
				r.Err = toHelperErr(err)
				break
			}
			r.Events = append(r.Events, toHelperEvent(ev))
		}
		return r
	}
	session := func(c helperCmd) *acpclient.Session { return sessions[c.Session] }
	sc := bufio.NewScanner(stdin)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	enc := json.NewEncoder(stdout)
	for sc.Scan() {
		var c helperCmd
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			return 2
		}
		start := time.Now()
		var r helperReply
		keep := func(s *acpclient.Session, err error) {
			if err != nil {
				r.Err = toHelperErr(err)
				return
			}
			sessions[s.ID()] = s
			r.Session, r.Servers, r.Mode, r.Models = s.ID(), s.MCPServers(), s.Mode(), s.AvailableModels()
			for _, ev := range s.History() {
				r.History = append(r.History, toHelperEvent(ev))
			}
		}
		switch c.Op {
		case "connect":
			var err error
			conn, err = acpclient.Connect(ctx, &acpclient.Options{SocketName: socket,
				MaxWait: time.Duration(c.MaxWaitMs) * time.Millisecond, RetryInterval: time.Duration(c.RetryMs) * time.Millisecond,
				ClientName: "org.agentos.sample.notes", // a spoofed name: must change nothing
				OnWaiting: func(id string, waited time.Duration) {
					r.Waits = append(r.Waits, helperWait{RequestID: id, WaitedMs: waited.Milliseconds()})
				}})
			r.Err = toHelperErr(err)
		case "new":
			var scope []acpclient.ToolRef
			if c.Scope != nil {
				scope = *c.Scope
				if scope == nil {
					scope = []acpclient.ToolRef{}
				}
			}
			keep(conn.NewSession(ctx, acpclient.SessionOptions{ToolScope: scope, MCPServers: c.Servers, Cwd: c.Cwd}))
		case "fork":
			var scope []acpclient.ToolRef
			if c.Scope != nil {
				scope = *c.Scope
			}
			keep(conn.ForkSession(ctx, c.Session, acpclient.SessionOptions{ToolScope: scope}))
		case "load":
			keep(conn.LoadSession(ctx, c.Session, acpclient.LoadOptions{MCPServers: c.Servers}))
		case "resume":
			keep(conn.ResumeSession(ctx, c.Session, acpclient.LoadOptions{}))
		case "prompt":
			r = prompt(session(c), c.Text, c.Thoughts)
		case "promptAsync":
			s := session(c)
			async.Lock()
			async.done = make(chan struct{})
			done := async.done
			async.Unlock()
			go func() {
				rep := prompt(s, c.Text, c.Thoughts)
				async.Lock()
				async.reply = rep
				async.Unlock()
				close(done)
			}()
		case "wait":
			async.Lock()
			done := async.done
			async.Unlock()
			select {
			case <-done:
				async.Lock()
				r = async.reply
				async.Unlock()
			case <-time.After(20 * time.Second):
				r.Err = &helperErr{Code: "TIMEOUT"}
			}
		case "list":
			list, err := conn.ListSessions(ctx, "")
			r.Err = toHelperErr(err)
			for _, s := range list {
				r.Sessions = append(r.Sessions, helperSession{ID: s.ID, Title: s.Title})
			}
		case "delete":
			r.Err = toHelperErr(conn.DeleteSession(ctx, c.Session))
		case "close":
			r.Err = toHelperErr(session(c).Close(ctx))
		case "setMode":
			r.Err = toHelperErr(session(c).SetMode(ctx, c.Mode))
		case "setModel":
			r.Err = toHelperErr(session(c).SetModel(ctx, c.Model))
		case "disconnect":
			conn.Close()
		case "waitDone":
			select {
			case <-conn.Done():
			case <-time.After(10 * time.Second):
				r.Err = &helperErr{Code: "TIMEOUT"}
			}
		case "raw":
			// Dial a socket and report its first line, or that it closed
			// without a byte.
			name := c.Socket
			if name == "" {
				name = socket
			}
			nc, err := transport.Dial(ctx, name)
			if err != nil {
				r.Err = toHelperErr(err)
				break
			}
			nc.SetReadDeadline(time.Now().Add(3 * time.Second))
			line, err := bufio.NewReader(nc).ReadString('\n')
			r.Line = line
			var ne net.Error
			r.Closed = line == "" && err != nil && !(errors.As(err, &ne) && ne.Timeout())
			nc.Close()
		}
		r.ElapsedMs = time.Since(start).Milliseconds()
		if err := enc.Encode(r); err != nil {
			return 1
		}
	}
	if conn != nil {
		conn.Close()
	}
	return 0
}
