// Package mcptest is the test plugin app of the extension-host regression
// suite (spec §9.6): package org.agentos.test.mcp.plugin, plugin
// "mcptest", MCP server "test", written against the provider SDK.
//
// Tools:
//
//	echo {text}          readOnly: returns text, structured {text, pid}
//	slow {ms=60000}      sleeps ms or until cancelled (cancellations are counted)
//	stats {}             readOnly: {pid, calls, cancelled, inFlight, extra}
//	add_tool {}          idempotent: adds tool "extra" (returns "extra"); list_changed
//	remove_tool {}       idempotent: removes "extra"; list_changed
//	die {after_ms=300}   ends the process after after_ms
//	wipe {}              destructiveHint: HIGH risk; touches nothing
//
// Skills (assets/agent-plugin/skills): greet, with reference/details.md
// holding "marker 7f3a", and broken, whose SKILL.md frontmatter is
// invalid on purpose.
package mcptest

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentoslab/agentlab/runtime/sdk/plugin"
	"github.com/agentoslab/agentlab/sampleapps/internal/netprobe"
)

// Identity of the test plugin (spec §9.6).
const (
	Package = "org.agentos.test.mcp.plugin"
	Plugin  = "mcptest"
	Server  = "test"
	Service = "org.agentos.test.mcp.plugin.TestMcpService"
	Binary  = "mcptest"
	Label   = "MCP test"
)

// DebugCommands are the binary's one-shot commands: net reports what the
// process may do on the network (the plugin declares the network
// permission, as a provider that reaches a service would).
var DebugCommands = []string{netprobe.Command}

// Tool names.
const (
	ToolEcho       = "echo"
	ToolSlow       = "slow"
	ToolStats      = "stats"
	ToolAddTool    = "add_tool"
	ToolRemoveTool = "remove_tool"
	ToolDie        = "die"
	ToolWipe       = "wipe"
	ToolExtra      = "extra"
)

// Tools are the seven tools present from the start, sorted.
var Tools = []string{ToolAddTool, ToolDie, ToolEcho, ToolRemoveTool, ToolSlow, ToolStats, ToolWipe}

// Options configure an App. The zero value works.
type Options struct {
	// Exit ends the process for die; nil means os.Exit.
	Exit func(code int)
	// SlowDefault is slow's default duration; 0 means 60 s.
	SlowDefault time.Duration
	// Logger receives the SDK's connection problems (refused peers); nil
	// discards.
	Logger *slog.Logger
}

// App is the test plugin's state behind its MCP server.
type App struct {
	srv  *plugin.Server
	exit func(int)
	slow time.Duration

	calls     atomic.Int64
	cancelled atomic.Int64
	inFlight  atomic.Int64

	mu    sync.Mutex
	extra bool // guarded by mu
	dying bool // guarded by mu
}

// New returns the app with its MCP server and tools registered.
func New(opts *Options) *App {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Exit == nil {
		o.Exit = os.Exit
	}
	if o.SlowDefault <= 0 {
		o.SlowDefault = 60 * time.Second
	}
	a := &App{srv: plugin.NewServer(plugin.Info{Name: Server}, &plugin.Options{Logger: o.Logger}), exit: o.Exit, slow: o.SlowDefault}
	for _, t := range a.tools() {
		a.srv.MustAddTool(a.strict(t))
	}
	return a
}

// Server is the app's MCP server.
func (a *App) Server() *plugin.Server { return a.srv }

var (
	yes = func() *bool { b := true; return &b }()
	no  = func() *bool { b := false; return &b }()
)

func schema(props string, required ...string) json.RawMessage {
	req := ""
	if len(required) > 0 {
		b, _ := json.Marshal(required)
		req = `,"required":` + string(b)
	}
	return json.RawMessage(`{"type":"object","properties":{` + props + `}` + req + `,"additionalProperties":false}`)
}

// strict makes t refuse arguments outside its input schema (an extra
// property, a wrong type): the schemas are the test plugin's contract. A
// refused call still counts as a call the provider received (stats), as
// the upstream suite's exactlyOnce checks expect.
func (a *App) strict(t plugin.Tool) plugin.Tool {
	check, err := plugin.NewInputCheck(t)
	if err != nil {
		panic("mcptest: " + err.Error())
	}
	h := t.Handler
	t.Handler = func(ctx context.Context, args json.RawMessage) (*plugin.Result, error) {
		if r := check.Check(args); r != nil {
			return r, nil
		}
		return h(ctx, args)
	}
	if t.Name != ToolStats { // asking must not change the answer
		t.Handler = a.counted(t.Handler)
	}
	return t
}

// counted wraps a handler with the call counters of stats.
func (a *App) counted(h plugin.Handler) plugin.Handler {
	return func(ctx context.Context, args json.RawMessage) (*plugin.Result, error) {
		a.calls.Add(1)
		a.inFlight.Add(1)
		defer a.inFlight.Add(-1)
		return h(ctx, args)
	}
}

func (a *App) tools() []plugin.Tool {
	return []plugin.Tool{
		{
			Name:        ToolEcho,
			Title:       "Echo",
			Description: "Return the given text unchanged, with the provider's process id.",
			InputSchema: schema(`"text":{"type":"string","description":"Text to return."}`, "text"),
			Annotations: plugin.Annotations{ReadOnlyHint: yes, DestructiveHint: no, IdempotentHint: yes},
			Handler:     a.echo,
		},
		{
			Name:        ToolSlow,
			Title:       "Slow",
			Description: "Wait the given number of milliseconds (default 60000), or until the call is cancelled.",
			InputSchema: schema(`"ms":{"type":"integer","minimum":0,"description":"How long to wait."}`),
			Annotations: plugin.Annotations{ReadOnlyHint: yes},
			Handler:     a.slowTool,
		},
		{
			Name:        ToolStats,
			Title:       "Stats",
			Description: "Report the provider's process id and call counters.",
			InputSchema: schema(``),
			Annotations: plugin.Annotations{ReadOnlyHint: yes},
			Handler:     a.stats,
		},
		{
			Name:        ToolAddTool,
			Description: "Add the tool \"extra\" (idempotent) and tell the client the tool list changed.",
			InputSchema: schema(``),
			Annotations: plugin.Annotations{IdempotentHint: yes},
			Handler:     a.addTool,
		},
		{
			Name:        ToolRemoveTool,
			Description: "Remove the tool \"extra\" (idempotent) and tell the client the tool list changed.",
			InputSchema: schema(``),
			Annotations: plugin.Annotations{IdempotentHint: yes},
			Handler:     a.removeTool,
		},
		{
			Name:        ToolDie,
			Description: "End the provider's process after after_ms milliseconds (default 300).",
			InputSchema: schema(`"after_ms":{"type":"integer","minimum":0}`),
			Handler:     a.die,
		},
		{
			Name:        ToolWipe,
			Title:       "Wipe",
			Description: "Pretend to erase everything (a destructive tool for consent tests; it changes nothing).",
			InputSchema: schema(``),
			Annotations: plugin.Annotations{DestructiveHint: yes},
			Handler:     func(context.Context, json.RawMessage) (*plugin.Result, error) { return plugin.Text("wiped"), nil },
		},
	}
}

func (a *App) echo(_ context.Context, args json.RawMessage) (*plugin.Result, error) {
	var in struct {
		Text *string `json:"text"`
	}
	if json.Unmarshal(args, &in) != nil || in.Text == nil {
		return plugin.Error(`echo needs a string "text".`), nil
	}
	r := plugin.JSON(map[string]any{"text": *in.Text, "pid": os.Getpid()})
	r.Text = *in.Text
	return r, nil
}

func (a *App) slowTool(ctx context.Context, args json.RawMessage) (*plugin.Result, error) {
	var in struct {
		MS *int64 `json:"ms"`
	}
	if json.Unmarshal(args, &in) != nil || (in.MS != nil && *in.MS < 0) {
		return plugin.Error(`slow takes an optional non-negative integer "ms".`), nil
	}
	d := a.slow
	if in.MS != nil {
		d = time.Duration(*in.MS) * time.Millisecond
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return plugin.JSON(map[string]any{"slept_ms": d.Milliseconds()}), nil
	case <-ctx.Done():
		a.cancelled.Add(1)
		return plugin.Error("slow was cancelled."), nil
	}
}

// Stats are stats's result.
type Stats struct {
	PID       int   `json:"pid"`
	Calls     int64 `json:"calls"`
	Cancelled int64 `json:"cancelled"`
	InFlight  int64 `json:"inFlight"`
	Extra     bool  `json:"extra"`
}

// Snapshot returns the counters.
func (a *App) Snapshot() Stats {
	a.mu.Lock()
	extra := a.extra
	a.mu.Unlock()
	return Stats{PID: os.Getpid(), Calls: a.calls.Load(), Cancelled: a.cancelled.Load(), InFlight: a.inFlight.Load(), Extra: extra}
}

func (a *App) stats(context.Context, json.RawMessage) (*plugin.Result, error) {
	return plugin.JSON(a.Snapshot()), nil
}

func (a *App) addTool(context.Context, json.RawMessage) (*plugin.Result, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.extra {
		a.extra = true
		a.srv.MustAddTool(a.strict(plugin.Tool{
			Name:        ToolExtra,
			Description: "Return the text \"extra\".",
			InputSchema: schema(``),
			Annotations: plugin.Annotations{ReadOnlyHint: yes},
			Handler:     func(context.Context, json.RawMessage) (*plugin.Result, error) { return plugin.Text("extra"), nil },
		}))
	}
	return plugin.JSON(map[string]any{"extra": true}), nil
}

func (a *App) removeTool(context.Context, json.RawMessage) (*plugin.Result, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.extra {
		a.extra = false
		a.srv.RemoveTool(ToolExtra)
	}
	return plugin.JSON(map[string]any{"extra": false}), nil
}

func (a *App) die(_ context.Context, args json.RawMessage) (*plugin.Result, error) {
	var in struct {
		AfterMS *int64 `json:"after_ms"`
	}
	if json.Unmarshal(args, &in) != nil || (in.AfterMS != nil && *in.AfterMS < 0) {
		return plugin.Error(`die takes an optional non-negative integer "after_ms".`), nil
	}
	after := int64(300)
	if in.AfterMS != nil {
		after = *in.AfterMS
	}
	a.mu.Lock()
	first := !a.dying
	a.dying = true
	a.mu.Unlock()
	if first {
		// The answer goes out before the process ends (unless after_ms is 0).
		time.AfterFunc(time.Duration(after)*time.Millisecond, func() { a.exit(3) })
	}
	return plugin.Text(fmt.Sprintf("dying in %d ms", after)), nil
}
