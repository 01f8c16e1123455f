// Package gateway is the caller SDK shell of the notes and SMS apps: a
// notes.Agent that runs one "schedule with AgentOS" round through
// runtime/sdk/acpclient (the seed's RealAgentOsGateway, §6).
//
// A round connects to the runtime's caller socket (the launcher gives
// its name in $AGENTOS_CALLER_SOCKET) and, while the owner has not
// answered the app's authorization request, reports EventWaiting on every
// retry; once the channel opens it reports EventRunning, opens a session
// with the app's toolScope and sends the prompt. The SDK's events become
// notes events (tool calls keep the SDK's Ref, so a call in scope carries
// its raw tool name), and the SDK's errors become *notes.AgentError whose
// Kind is the SDK's error name (DENIED, NO_MODEL, BUSY, …) with a sentence
// for the user.
package gateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/agentoslab/agentlab/runtime/sdk/acpclient"
	"github.com/agentoslab/agentlab/sampleapps/notes"
)

// Environment the launcher gives app processes (runtime/apps/launcher).
const (
	EnvCallerSocket = "AGENTOS_CALLER_SOCKET"
	EnvPackage      = "AGENTOS_PACKAGE"
)

// closeTimeout bounds the polite session/close after a round.
const closeTimeout = 2 * time.Second

// Options configure a Gateway. The zero value works.
type Options struct {
	// SocketName is the runtime's caller socket; "" means the SDK's
	// default (@agentos-caller without a prefix).
	SocketName string
	// ClientName and ClientVersion go into initialize's clientInfo
	// (display only: the runtime knows the app by its uid).
	ClientName, ClientVersion string
	// RetryInterval and MaxWait bound the wait for the owner's answer;
	// zero means the SDK's defaults (1 s, 90 s).
	RetryInterval, MaxWait time.Duration
	// Logger receives the SDK's connection diagnostics (never content);
	// nil discards.
	Logger *slog.Logger
}

// Gateway runs rounds through the caller SDK. Safe for concurrent use;
// each round has its own connection.
type Gateway struct {
	o Options
}

var _ notes.Agent = (*Gateway)(nil)

// New returns a Gateway for opts (nil means the zero Options).
func New(opts *Options) *Gateway {
	var o Options
	if opts != nil {
		o = *opts
	}
	return &Gateway{o: o}
}

// FromEnv returns a Gateway for an app process started by the launcher:
// the caller socket from $AGENTOS_CALLER_SOCKET and the client name from
// $AGENTOS_PACKAGE.
func FromEnv(getenv func(string) string, logger *slog.Logger) *Gateway {
	return New(&Options{SocketName: getenv(EnvCallerSocket), ClientName: getenv(EnvPackage), Logger: logger})
}

// GatewayName names the gateway in reports.
func (g *Gateway) GatewayName() string { return "agentos" }

// Schedule runs one round: connect (waiting for the owner's answer), a
// session limited to scope, one prompt. It returns the Done event's stop
// reason; a failure is a *notes.AgentError.
func (g *Gateway) Schedule(ctx context.Context, prompt string, scope []notes.ToolScopeEntry, onEvent func(notes.Event)) (string, error) {
	conn, err := acpclient.Connect(ctx, &acpclient.Options{
		SocketName: g.o.SocketName,
		OnWaiting: func(string, time.Duration) {
			onEvent(notes.Event{Kind: notes.EventWaiting})
		},
		RetryInterval: g.o.RetryInterval,
		MaxWait:       g.o.MaxWait,
		ClientName:    g.o.ClientName,
		ClientVersion: g.o.ClientVersion,
		Logger:        g.o.Logger,
	})
	if err != nil {
		return "", AgentError(err)
	}
	defer conn.Close()
	onEvent(notes.Event{Kind: notes.EventRunning})
	refs := make([]acpclient.ToolRef, len(scope))
	for i, e := range scope {
		refs[i] = acpclient.ToolRef{Plugin: e.Plugin, Tool: e.Tool}
	}
	s, err := conn.NewSession(ctx, acpclient.SessionOptions{ToolScope: refs})
	if err != nil {
		return "", AgentError(err)
	}
	defer func() {
		// The session stays in AgentOS's history; closing frees it now
		// rather than when it idles out.
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), closeTimeout)
		s.Close(cctx)
		cancel()
	}()
	stop := ""
	for ev, err := range s.Prompt(ctx, prompt, acpclient.PromptOptions{}) {
		if err != nil {
			return stop, AgentError(err)
		}
		if nev, ok := Event(ev); ok {
			if nev.Kind == notes.EventDone {
				stop = nev.StopReason
			}
			onEvent(nev)
		}
	}
	return stop, nil
}

// Event converts one SDK event of a prompt's stream; ok is false for
// events a round does not report (thoughts, history).
func Event(ev acpclient.Event) (notes.Event, bool) {
	switch ev := ev.(type) {
	case acpclient.Text:
		return notes.Event{Kind: notes.EventText, Text: ev.Text}, true
	case acpclient.ToolCall:
		out := notes.Event{Kind: notes.EventToolCall, ToolCallID: ev.ID, Tool: ev.Tool, Status: notes.ToolStatus(ev.Status),
			ArgumentsJSON: ev.ArgumentsJSON, ResultJSON: ev.ResultJSON}
		if ev.Ref != nil {
			out.Ref = &notes.ToolScopeEntry{Plugin: ev.Ref.Plugin, Tool: ev.Ref.Tool}
		}
		return out, true
	case acpclient.Done:
		return notes.Event{Kind: notes.EventDone, StopReason: ev.StopReason}, true
	}
	return notes.Event{}, false
}

// kinds maps the SDK's error names to the report's, with the sentence the
// user sees.
var kinds = map[acpclient.Code]struct {
	kind     notes.ErrorKind
	sentence string
}{
	acpclient.NotInstalled:                {notes.NotInstalled, "AgentOS is not installed or not running."},
	acpclient.AuthorizationPendingTimeout: {notes.AuthorizationPendingTimeout, "Nobody answered AgentOS's request to let this app use the agent in time."},
	acpclient.Denied:                      {notes.Denied, "AgentOS does not allow this app to use the agent."},
	acpclient.NoModel:                     {notes.NoModel, "AgentOS has no model configured."},
	acpclient.Busy:                        {notes.Busy, "AgentOS is busy with another request from this app; try again when it is done."},
	acpclient.RateLimited:                 {notes.RateLimited, "This app has sent AgentOS too many requests; try again later."},
	acpclient.TooLarge:                    {notes.TooLarge, "The request is too large for AgentOS."},
	acpclient.Disconnected:                {notes.Disconnected, "The connection to AgentOS ended."},
	acpclient.SessionNotFound:             {notes.SessionNotFound, "AgentOS no longer has this session."},
	acpclient.InvalidRequest:              {notes.InvalidRequest, "AgentOS refused the request as invalid."},
	acpclient.Unsupported:                 {notes.Unsupported, "This version of AgentOS does not support the request."},
	acpclient.Failed:                      {notes.Failed, "AgentOS could not run the request."},
}

// AgentError converts an SDK error to the report's *notes.AgentError
// (Err keeps the SDK's error); any other error is FAILED.
func AgentError(err error) error {
	var e *acpclient.Error
	if !errors.As(err, &e) {
		return &notes.AgentError{Kind: notes.Failed, Detail: kinds[acpclient.Failed].sentence, Err: err}
	}
	k, ok := kinds[e.Code]
	if !ok {
		k = kinds[acpclient.Failed]
	}
	detail := k.sentence
	if e.Code == acpclient.RateLimited && e.RetryAfterSeconds > 0 {
		detail = fmt.Sprintf("This app has sent AgentOS too many requests; try again in %d s.", e.RetryAfterSeconds)
	}
	return &notes.AgentError{Kind: k.kind, Detail: detail, Err: err}
}
