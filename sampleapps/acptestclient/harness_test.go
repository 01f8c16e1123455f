package acptestclient_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentoslab/agentlab/runtime/acp"
	"github.com/agentoslab/agentlab/runtime/admin"
	"github.com/agentoslab/agentlab/runtime/bridge"
	"github.com/agentoslab/agentlab/runtime/callerchan"
	"github.com/agentoslab/agentlab/runtime/catalog"
	"github.com/agentoslab/agentlab/runtime/consent/callers"
	"github.com/agentoslab/agentlab/runtime/engine"
	"github.com/agentoslab/agentlab/runtime/model"
	"github.com/agentoslab/agentlab/runtime/model/script"
	"github.com/agentoslab/agentlab/runtime/quota"
	"github.com/agentoslab/agentlab/runtime/store"
	"github.com/agentoslab/agentlab/runtime/transport"
	"github.com/stretchr/testify/require"
)

// The runtime the client is tested against: store, engine, quota,
// authorization registry, ACP agent and the caller channel on a real
// abstract socket, in this process. The test process's own uid is the
// app (the channel identifies it by SO_PEERCRED like any app).

const testPackage = "org.agentos.test.acp.client"

var prefixSeq atomic.Int64

// echoTool is the one tool: mcptest's echo, named as the catalog names it.
var echoID = catalog.ToolID{Plugin: "mcptest", Server: "test", Tool: "echo"}

type echoTools struct{ final string }

func newEchoTools() *echoTools {
	names, err := catalog.Assign([]catalog.ToolID{echoID})
	if err != nil {
		panic(err)
	}
	return &echoTools{final: names[echoID]}
}

func (e *echoTools) visible(s engine.SessionView) bool {
	if s.Mode == "chat" {
		return false
	}
	if s.Scope == nil {
		return true
	}
	for _, sc := range s.Scope {
		if sc.Plugin == echoID.Plugin && sc.Tool == echoID.Tool {
			return true
		}
	}
	return false
}

func (e *echoTools) ForSession(_ context.Context, s engine.SessionView) ([]engine.ToolDef, string, error) {
	if !e.visible(s) {
		return nil, "", nil
	}
	return []engine.ToolDef{{Tool: model.Tool{Name: e.final, InputSchema: json.RawMessage(`{"type":"object"}`)},
		Display: engine.ToolDisplay{Title: "Echo"}}}, "", nil
}

func (e *echoTools) ForgetSession(string) {}

func (e *echoTools) Call(ctx context.Context, req engine.ToolCallRequest, ev engine.ToolEvents) (engine.ToolResult, error) {
	if req.Name != e.final || !e.visible(req.Session) {
		return engine.ToolResult{Text: "[agentos:tool_not_in_catalog] Tool " + req.Name + " is not available.",
			IsError: true, Code: "tool_not_in_catalog", Outcome: engine.OutcomeRejected}, nil
	}
	if err := ev.Emit(ctx, engine.EvToolDispatched, engine.ToolRefBody{ToolCallID: req.ToolCallID}); err != nil {
		return engine.ToolResult{}, err
	}
	var args struct{ Text string }
	json.Unmarshal(req.Arguments, &args)
	b, _ := json.Marshal(map[string]string{"echo": args.Text})
	return engine.ToolResult{Text: string(b), Outcome: engine.OutcomeCompleted}, nil
}

// runtime is one in-process runtime.
type runtime struct {
	names transport.Names
	reg   *callers.Registry
	srv   *callerchan.Server
}

func newRuntime(t *testing.T, cfg callers.Config) *runtime {
	t.Helper()
	dir := t.TempDir()
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(dir, "agentos.db"))
	if err != nil {
		t.Fatal(err)
	}
	q := quota.New(nil)
	eng, err := engine.New(ctx, &engine.Options{Store: st, Tools: newEchoTools(), Admission: q,
		Models: engine.StaticModel(model.Config{Provider: "scripted"}, script.NewProvider(nil)),
		Limits: engine.Limits{CancelWait: 3 * time.Second, CancelGrace: 200 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	reg, err := callers.Open(&callers.Options{Dir: filepath.Join(dir, "acp"), Config: cfg, Canceller: eng,
		Usage: func(owner string) (int64, int, int) {
			u, eu := q.Usage(owner), eng.Usage(owner)
			return u.Total, u.InWindow, eu.Running + eu.Queued
		}})
	if err != nil {
		t.Fatal(err)
	}
	rt := &runtime{names: transport.Names{Prefix: fmt.Sprintf("atc%d-%d-", os.Getpid(), prefixSeq.Add(1))}, reg: reg}
	agent := acp.New(eng, &acp.Options{Version: "test", CancelWait: 3 * time.Second})
	me := os.Getuid()
	srv, err := callerchan.New(&callerchan.Options{Name: rt.names.Caller(), Registry: reg, RuntimeUID: -1,
		Packages: func(uid int) []callers.App {
			if uid != me {
				return nil
			}
			return []callers.App{{UID: me, Package: testPackage, Label: "ACP Test Client", SigningDigest: fmt.Sprintf("%064x", 7)}}
		},
		Serve: func(ctx context.Context, c engine.Caller, s *transport.RPCStream) { agent.Serve(ctx, c, s) }})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(ctx); err != nil {
		t.Fatal(err)
	}
	rt.srv = srv
	// Desktop access and the owner's admin socket, as serve wires them;
	// this process runs as root, which both admit.
	br, err := bridge.Open(&bridge.Options{Dir: filepath.Join(dir, "desktop"), Name: rt.names.ACP(), HandshakeTimeout: 5 * time.Second,
		Serve: func(ctx context.Context, c engine.Caller, s *transport.RPCStream) { agent.Serve(ctx, c, s) }})
	if err != nil {
		t.Fatal(err)
	}
	adm := admin.NewServer(&admin.Options{Name: rt.names.Admin(),
		Methods: append(bridge.AdminMethods(br), callerchan.AdminMethods(reg, nil)...)})
	if err := adm.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		adm.Close()
		br.Close()
		srv.Close()
		reg.Close()
		cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		eng.Close(cctx)
		st.Close()
	})
	return rt
}

// allow answers the app's authorization as the owner would.
func (rt *runtime) allow(t *testing.T) {
	t.Helper()
	_, err := rt.reg.OpenChannel(callers.App{UID: os.Getuid(), Package: testPackage, Label: "ACP Test Client",
		SigningDigest: fmt.Sprintf("%064x", 7)}, func() {})
	var ref *callers.Refusal
	if !errors.As(err, &ref) || ref.Reason != callers.ReasonPending {
		t.Fatalf("first open: %v", err)
	}
	if ok, err := rt.reg.Answer(ref.RequestID, true); !ok || err != nil {
		t.Fatalf("answer: %v %v", ok, err)
	}
}

// pendingRequest waits for the app's pending card and returns its id.
func (rt *runtime) pendingRequest(t *testing.T) string {
	t.Helper()
	var id string
	require.Eventually(t, func() bool {
		for _, it := range rt.reg.List().Callers {
			if it.PackageName == testPackage && it.RequestID != "" {
				id = it.RequestID
				return true
			}
		}
		return false
	}, 10*time.Second, 10*time.Millisecond, "no pending card")
	return id
}
