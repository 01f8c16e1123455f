package acp

import (
	"context"
	"encoding/json"
	"slices"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/agentoslab/agentlab/runtime/catalog"
	"github.com/agentoslab/agentlab/runtime/engine"
	"github.com/agentoslab/agentlab/runtime/errcode"
	"github.com/agentoslab/agentlab/runtime/internal/chars"
	"github.com/agentoslab/agentlab/runtime/internal/faultinject"
)

// initializeResponse is spec §2.3's answer, field for field. It is
// declared here rather than taken from the SDK because the SDK's types
// omit false capabilities and have no session/delete capability.
type initializeResponse struct {
	ProtocolVersion   int                `json:"protocolVersion"`
	AgentCapabilities agentCapabilities  `json:"agentCapabilities"`
	AgentInfo         sdk.Implementation `json:"agentInfo"`
	AuthMethods       []sdk.AuthMethod   `json:"authMethods"`
	Meta              map[string]any     `json:"_meta"`
}

type agentCapabilities struct {
	LoadSession         bool                `json:"loadSession"`
	PromptCapabilities  promptCapabilities  `json:"promptCapabilities"`
	McpCapabilities     mcpCapabilities     `json:"mcpCapabilities"`
	SessionCapabilities sessionCapabilities `json:"sessionCapabilities"`
}

type promptCapabilities struct {
	Image           bool `json:"image"`
	Audio           bool `json:"audio"`
	EmbeddedContext bool `json:"embeddedContext"`
}

type mcpCapabilities struct {
	HTTP bool `json:"http"`
	SSE  bool `json:"sse"`
}

type capability struct{}

type sessionCapabilities struct {
	Fork   capability `json:"fork"`
	List   capability `json:"list"`
	Resume capability `json:"resume"`
	Delete capability `json:"delete"`
	Close  capability `json:"close"`
}

// initialize answers protocol version 1 whatever the client asks and
// records the extensions it negotiates.
func (cn *conn) initialize(_ context.Context, p params) (any, error) {
	meta, err := p.object("_meta")
	if err != nil {
		return nil, err
	}
	exts := parseExtensions(meta)
	if faultinject.Enabled && faultinject.Active(faultinject.SpoofedCallerName) && cn.caller.Kind == engine.CallerApp {
		// injected fault: the claimed clientInfo name becomes the package
		var ci struct{ Name string }
		if json.Unmarshal(p["clientInfo"], &ci) == nil && ci.Name != "" {
			cn.caller.Package, cn.caller.Label = ci.Name, ci.Name
		}
	}
	cn.mu.Lock()
	cn.extensions = exts
	cn.mu.Unlock()
	title := "AgentOS"
	return initializeResponse{
		ProtocolVersion: 1,
		AgentCapabilities: agentCapabilities{
			LoadSession:        true,
			PromptCapabilities: promptCapabilities{EmbeddedContext: true},
			McpCapabilities:    mcpCapabilities{HTTP: true},
		},
		AgentInfo:   sdk.Implementation{Name: "agentos", Title: &title, Version: cn.a.version},
		AuthMethods: []sdk.AuthMethod{},
		Meta: map[string]any{metaKey: map[string]any{
			"profile":       1,
			"runtime":       cn.a.version,
			"securityLevel": "best_effort",
			"extensions": map[string]any{
				extAutoSelect:   map[string]int{"version": 1},
				extToolScope:    map[string]int{"version": 1},
				extSessionSetup: map[string]int{"version": 1},
			},
		}},
	}, nil
}

// sessionParams are the fields new, load, resume and fork share.
type sessionParams struct {
	cwd     string
	servers []catalog.SessionServer
	meta    []byte
}

func readSessionParams(p params) (sessionParams, error) {
	var sp sessionParams
	var err error
	if sp.cwd, err = p.required("cwd"); err != nil {
		return sp, err
	}
	if sp.meta, err = p.object("_meta"); err != nil {
		return sp, err
	}
	if sp.servers, err = parseServers(p["mcpServers"]); err != nil {
		return sp, err
	}
	if err := catalog.ValidateSessionServers(sp.servers); err != nil {
		return sp, err
	}
	return sp, nil
}

func (cn *conn) newSession(ctx context.Context, p params) (any, error) {
	sp, err := readSessionParams(p)
	if err != nil {
		return nil, err
	}
	scope, present, err := catalog.ParseToolScope(sp.meta)
	if err != nil {
		return nil, err
	}
	engScope := catalog.ScopeAs[engine.ToolScopeEntry](scope)
	if present && engScope == nil {
		engScope = []engine.ToolScopeEntry{}
	}
	auto, err := parseAutoSelect(sp.meta, cn.negotiated(extAutoSelect))
	if err != nil {
		return nil, err
	}
	var (
		info engine.SessionInfo
		sel  *selection
	)
	if auto.present {
		info, sel, err = cn.autoSelect(ctx, sp.cwd, engScope, auto.query)
	} else {
		info, err = cn.a.e.NewSession(ctx, cn.caller, sp.cwd, engScope)
	}
	if err != nil {
		return nil, err
	}
	created := sel == nil || sel.Created
	statuses, err := cn.a.servers.Attach(ctx, info.ID, cn.caller, sp.servers)
	if err != nil {
		if created {
			cn.a.e.DeleteSession(context.WithoutCancel(ctx), cn.caller, info.ID)
		}
		return nil, err
	}
	if err := cn.marker(ctx, info.ID, 0, statuses, sel); err != nil {
		return nil, err
	}
	modes, models, options := cn.sessionState(info)
	return sdk.NewSessionResponse{SessionId: sdk.SessionId(info.ID), Modes: modes, Models: models, ConfigOptions: options}, nil
}

func (cn *conn) loadSession(ctx context.Context, p params) (any, error) {
	return cn.openSession(ctx, p, true)
}

func (cn *conn) resumeSession(ctx context.Context, p params) (any, error) {
	return cn.openSession(ctx, p, false)
}

// openSession is load (with history replay) and resume (without). A
// toolScope in the request is ignored; mcpServers replace the attached ones.
func (cn *conn) openSession(ctx context.Context, p params, replay bool) (any, error) {
	id, err := p.required("sessionId")
	if err != nil {
		return nil, err
	}
	sp, err := readSessionParams(p)
	if err != nil {
		return nil, err
	}
	info, err := cn.a.e.OpenSession(ctx, cn.caller, id)
	if err != nil {
		return nil, err
	}
	statuses, err := cn.a.servers.Attach(ctx, id, cn.caller, sp.servers)
	if err != nil {
		return nil, err
	}
	replayed := 0
	if replay {
		if replayed, err = cn.replay(ctx, id); err != nil {
			return nil, err
		}
	}
	if err := cn.marker(ctx, id, replayed, statuses, nil); err != nil {
		return nil, err
	}
	modes, models, options := cn.sessionState(info)
	if replay {
		return sdk.LoadSessionResponse{Modes: modes, Models: models, ConfigOptions: options}, nil
	}
	return sdk.ResumeSessionResponse{Modes: modes, Models: models, ConfigOptions: options}, nil
}

// replay sends the session's history (the last 200 turns) mapped exactly
// like live updates, in pages of 500 events; each send waits for the
// connection to take it, so a slow client slows the replay down rather
// than growing a buffer. It returns the number of updates sent.
func (cn *conn) replay(ctx context.Context, id string) (int, error) {
	after, last, err := cn.a.e.History(ctx, id)
	if err != nil {
		return 0, err
	}
	running, _, _ := cn.a.e.ActiveTask(ctx, id)
	m := newMapper(true, cn.caller.Kind)
	n := 0
	send := func(us []sdk.SessionUpdate) error {
		for _, u := range us {
			if err := cn.notify(ctx, id, u); err != nil {
				return errcode.Wrap(errcode.Internal, "the connection ended during replay", err)
			}
			n++
		}
		return nil
	}
	for after < last {
		evs, err := cn.a.e.Events(ctx, id, after, replayPage)
		if err != nil {
			return n, err
		}
		if len(evs) == 0 {
			break
		}
		for _, ev := range evs {
			if ev.Seq > last {
				break
			}
			if err := send(m.updates(ev)); err != nil {
				return n, err
			}
			after = ev.Seq
		}
	}
	return n, send(m.finish(running))
}

const replayPage = 500

func (cn *conn) forkSession(ctx context.Context, p params) (any, error) {
	src, err := p.required("sessionId")
	if err != nil {
		return nil, err
	}
	sp, err := readSessionParams(p)
	if err != nil {
		return nil, err
	}
	scope, present, err := catalog.ParseToolScope(sp.meta)
	if err != nil {
		return nil, err
	}
	engScope := catalog.ScopeAs[engine.ToolScopeEntry](scope)
	if present && engScope == nil {
		engScope = []engine.ToolScopeEntry{}
	}
	info, err := cn.a.e.ForkSession(ctx, cn.caller, src, sp.cwd, engScope)
	if err != nil {
		return nil, err
	}
	statuses, err := cn.a.servers.Attach(ctx, info.ID, cn.caller, sp.servers)
	if err != nil {
		cn.a.e.DeleteSession(context.WithoutCancel(ctx), cn.caller, info.ID)
		return nil, err
	}
	if err := cn.marker(ctx, info.ID, 0, statuses, nil); err != nil {
		return nil, err
	}
	modes, models, options := cn.sessionState(info)
	return sdk.NewSessionResponse{SessionId: sdk.SessionId(info.ID), Modes: modes, Models: models, ConfigOptions: options}, nil
}

// listTitleChars bounds a listed title (spec §2.5).
const listTitleChars = 80

func (cn *conn) listSessions(ctx context.Context, p params) (any, error) {
	cwd, ok, err := p.str("cwd")
	if err != nil {
		return nil, err
	}
	var filter *string
	if ok {
		filter = &cwd
	}
	list, err := cn.a.e.ListSessions(ctx, cn.caller, filter)
	if err != nil {
		return nil, err
	}
	out := sdk.ListSessionsResponse{Sessions: []sdk.SessionInfo{}}
	for _, s := range list {
		title := chars.Cut(s.Title, listTitleChars)
		updated := s.UpdatedAt.UTC().Format("2006-01-02T15:04:05.000Z")
		out.Sessions = append(out.Sessions, sdk.SessionInfo{SessionId: sdk.SessionId(s.ID), Cwd: s.Cwd, Title: &title, UpdatedAt: &updated})
	}
	return out, nil
}

func (cn *conn) deleteSession(ctx context.Context, p params) (any, error) {
	id, err := p.required("sessionId")
	if err != nil {
		return nil, err
	}
	if err := cn.a.e.DeleteSession(ctx, cn.caller, id); err != nil {
		return nil, err
	}
	cn.a.servers.Forget(id)
	return struct{}{}, nil
}

func (cn *conn) closeSession(ctx context.Context, p params) (any, error) {
	id, err := p.required("sessionId")
	if err != nil {
		return nil, err
	}
	if err := cn.a.e.CloseSession(ctx, cn.caller, id); err != nil {
		return nil, err
	}
	cn.a.servers.Forget(id)
	return sdk.CloseSessionResponse{}, nil
}

func (cn *conn) setMode(ctx context.Context, p params) (any, error) {
	id, err := p.required("sessionId")
	if err != nil {
		return nil, err
	}
	mode, err := p.required("modeId")
	if err != nil {
		return nil, err
	}
	if err := cn.applyConfig(ctx, id, "mode", mode); err != nil {
		return nil, err
	}
	return sdk.SetSessionModeResponse{}, nil
}

func (cn *conn) setModel(ctx context.Context, p params) (any, error) {
	id, err := p.required("sessionId")
	if err != nil {
		return nil, err
	}
	modelID, err := p.required("modelId")
	if err != nil {
		return nil, err
	}
	if err := cn.applyConfig(ctx, id, "model", modelID); err != nil {
		return nil, err
	}
	return sdk.UnstableSetSessionModelResponse{}, nil
}

func (cn *conn) setConfigOption(ctx context.Context, p params) (any, error) {
	id, err := p.required("sessionId")
	if err != nil {
		return nil, err
	}
	configID, err := p.required("configId")
	if err != nil {
		return nil, err
	}
	value, ok, err := p.str("value")
	if err != nil || !ok {
		return nil, errcode.New(errcode.InvalidParams, "value must be a string")
	}
	if configID != "mode" && configID != "model" {
		return nil, errcode.New(errcode.InvalidParams, "unknown config option")
	}
	if err := cn.applyConfig(ctx, id, configID, value); err != nil {
		return nil, err
	}
	info, err := cn.a.e.Session(ctx, cn.caller, id)
	if err != nil {
		return nil, err
	}
	_, _, options := cn.sessionState(info)
	return sdk.SetSessionConfigOptionResponse{ConfigOptions: options}, nil
}

// applyConfig sets the mode or model, then tells the client: a
// current_mode_update (for the mode) and a config_option_update.
func (cn *conn) applyConfig(ctx context.Context, id, key, value string) error {
	var (
		info engine.SessionInfo
		err  error
	)
	if key == "mode" {
		info, err = cn.a.e.SetMode(ctx, cn.caller, id, value)
	} else {
		info, err = cn.a.e.SetModel(ctx, cn.caller, id, value)
	}
	if err != nil {
		return err
	}
	if key == "mode" {
		if err := cn.notify(ctx, id, sdk.SessionUpdate{CurrentModeUpdate: &sdk.SessionCurrentModeUpdate{
			CurrentModeId: sdk.SessionModeId(info.Mode)}}); err != nil {
			return errcode.Wrap(errcode.Internal, "the connection ended", err)
		}
	}
	_, _, options := cn.sessionState(info)
	if err := cn.notify(ctx, id, sdk.SessionUpdate{ConfigOptionUpdate: &sdk.SessionConfigOptionUpdate{ConfigOptions: options}}); err != nil {
		return errcode.Wrap(errcode.Internal, "the connection ended", err)
	}
	return nil
}

var modeNames = map[catalog.Mode][2]string{
	catalog.ModeDefault:  {"Default", "Every tool in the session's scope, with the usual confirmations."},
	catalog.ModeReadOnly: {"Read only", "Only tools that read; tools that change anything are hidden."},
	catalog.ModeChat:     {"Chat", "No tools."},
}

// sessionState is the modes, models and config options a session
// response and config_option_update carry (spec §2.5); models only when
// the configured endpoint offers choices.
func (cn *conn) sessionState(info engine.SessionInfo) (*sdk.SessionModeState, *sdk.SessionModelState, []sdk.SessionConfigOption) {
	modes := &sdk.SessionModeState{CurrentModeId: sdk.SessionModeId(info.Mode), AvailableModes: []sdk.SessionMode{}}
	var modeOpts sdk.SessionConfigSelectOptionsUngrouped
	for _, m := range catalog.Modes() {
		n := modeNames[m]
		desc := n[1]
		modes.AvailableModes = append(modes.AvailableModes, sdk.SessionMode{Id: sdk.SessionModeId(m), Name: n[0], Description: &desc})
		modeOpts = append(modeOpts, sdk.SessionConfigSelectOption{Value: sdk.SessionConfigValueId(m), Name: n[0], Description: &desc})
	}
	modeCat, modelCat := sdk.SessionConfigOptionCategoryMode, sdk.SessionConfigOptionCategoryModel
	options := []sdk.SessionConfigOption{{Select: &sdk.SessionConfigOptionSelect{
		Id: "mode", Name: "Mode", Category: &modeCat, CurrentValue: sdk.SessionConfigValueId(info.Mode),
		Options: sdk.SessionConfigSelectOptions{Ungrouped: &modeOpts}, Type: "select",
	}}}
	choices, def := cn.a.e.ModelChoices()
	if len(choices) == 0 {
		return modes, nil, options
	}
	current := def
	if slices.Contains(choices, info.ModelID) {
		current = info.ModelID
	}
	models := &sdk.SessionModelState{CurrentModelId: sdk.ModelId(current)}
	var modelOpts sdk.SessionConfigSelectOptionsUngrouped
	for _, c := range choices {
		models.AvailableModels = append(models.AvailableModels, sdk.ModelInfo{ModelId: sdk.ModelId(c), Name: c})
		modelOpts = append(modelOpts, sdk.SessionConfigSelectOption{Value: sdk.SessionConfigValueId(c), Name: c})
	}
	options = append(options, sdk.SessionConfigOption{Select: &sdk.SessionConfigOptionSelect{
		Id: "model", Name: "Model", Category: &modelCat, CurrentValue: sdk.SessionConfigValueId(current),
		Options: sdk.SessionConfigSelectOptions{Ungrouped: &modelOpts}, Type: "select",
	}})
	return modes, models, options
}

// marker ends a session establishment (spec §2.4 sessionSetup): one
// session_info_update whose _meta carries setup{replayed} when the client
// negotiated sessionSetup, and selection, mcpServers and activeTask when
// they apply. Nothing is sent when nothing applies.
func (cn *conn) marker(ctx context.Context, id string, replayed int, servers []ServerStatus, sel *selection) error {
	m := map[string]any{}
	if cn.negotiated(extSessionSetup) {
		m["setup"] = map[string]int{"replayed": replayed}
	}
	if sel != nil {
		m["selection"] = sel
	}
	if len(servers) > 0 {
		m["mcpServers"] = servers
	}
	if taskID, state, ok := cn.a.e.ActiveTask(ctx, id); ok {
		m["activeTask"] = map[string]string{"taskId": taskID, "state": state}
	}
	if len(m) == 0 {
		return nil
	}
	err := cn.notify(ctx, id, sdk.SessionUpdate{SessionInfoUpdate: &sdk.SessionSessionInfoUpdate{
		Meta: map[string]any{metaKey: m}}})
	if err != nil {
		return errcode.Wrap(errcode.Internal, "the connection ended", err)
	}
	return nil
}
