package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentoslab/agentlab/runtime/aci/controller"
	"github.com/agentoslab/agentlab/runtime/acp"
	"github.com/agentoslab/agentlab/runtime/admin"
	"github.com/agentoslab/agentlab/runtime/apps"
	"github.com/agentoslab/agentlab/runtime/apps/launcher"
	"github.com/agentoslab/agentlab/runtime/bridge"
	"github.com/agentoslab/agentlab/runtime/callerchan"
	"github.com/agentoslab/agentlab/runtime/consent/callers"
	"github.com/agentoslab/agentlab/runtime/console"
	"github.com/agentoslab/agentlab/runtime/engine"
	"github.com/agentoslab/agentlab/runtime/errcode"
	"github.com/agentoslab/agentlab/runtime/ext/broker"
	"github.com/agentoslab/agentlab/runtime/ext/sessionmcp"
	"github.com/agentoslab/agentlab/runtime/model"
	"github.com/agentoslab/agentlab/runtime/modelconf"
	"github.com/agentoslab/agentlab/runtime/quota"
	"github.com/agentoslab/agentlab/runtime/store"
	"github.com/agentoslab/agentlab/runtime/transport"
)

// TestSystemNamesEverySubsystem: the composition root's one struct names
// every subsystem, so `go doc` of this package shows the whole runtime.
// A subsystem wired somewhere else (a hook, a package of overrides)
// would be missing here.
func TestSystemNamesEverySubsystem(t *testing.T) {
	want := map[string]reflect.Type{
		"Store":    reflect.TypeFor[*store.Store](),
		"Models":   reflect.TypeFor[*modelconf.Store](),
		"Quota":    reflect.TypeFor[*quota.Quota](),
		"Sessions": reflect.TypeFor[*sessionmcp.Manager](),
		"Broker":   reflect.TypeFor[*broker.Broker](),
		"Engine":   reflect.TypeFor[*engine.Engine](),
		"Agent":    reflect.TypeFor[*acp.Agent](),
		"Callers":  reflect.TypeFor[*callers.Registry](),
		"Apps":     reflect.TypeFor[*apps.Table](),
		"Launcher": reflect.TypeFor[*launcher.Client](),
		"ACI":      reflect.TypeFor[*controller.Controller](),
		"Caller":   reflect.TypeFor[*callerchan.Server](),
		"Bridge":   reflect.TypeFor[*bridge.Bridge](),
		"ACP":      reflect.TypeFor[*transport.Service](),
		"Admin":    reflect.TypeFor[*admin.Server](),
		"Console":  reflect.TypeFor[*console.Server](),
	}
	st := reflect.TypeFor[System]()
	var exported []string
	for i := range st.NumField() {
		if f := st.Field(i); f.IsExported() {
			exported = append(exported, f.Name)
			if w, ok := want[f.Name]; assert.True(t, ok, "System.%s is not a known subsystem", f.Name) {
				assert.Equal(t, w, f.Type, "System.%s", f.Name)
			}
		}
	}
	for name := range want {
		assert.Contains(t, exported, name)
	}
}

// TestWholeAdminTable checks the method table as the root assembles it
// and the ctl verb table: every method valid and listed once (building
// the server panics on a duplicate), every ctl verb calling a method the
// server has, and the owner-only rules that matter most.
func TestWholeAdminTable(t *testing.T) {
	sys := &System{}
	ms := admin.NewServer(&admin.Options{Methods: sys.adminMethods()}).Methods()
	require.True(t, slices.IsSortedFunc(ms, func(a, b admin.Method) int { return strings.Compare(a.Name, b.Name) }))
	byName := map[string]admin.Method{}
	for _, m := range ms {
		byName[m.Name] = m
	}
	for _, group := range []string{"app.", "callers.", "consent.", "desktop.", "ext.", "model.", "plugins.", "console.", "sessions."} {
		assert.True(t, slices.ContainsFunc(ms, func(m admin.Method) bool { return strings.HasPrefix(m.Name, group) }), "no %s* method", group)
	}
	verbs := CtlVerbs()
	for _, v := range verbs {
		_, ok := byName[v.Method]
		assert.True(t, ok, "verb %s %s calls unknown method %s", v.Group, v.Name, v.Method)
	}
	for name, perm := range map[string]admin.Perm{"app.install": admin.Root, "app.uninstall": admin.Root, "app.run": admin.Root | admin.Shell} {
		assert.Equal(t, perm, byName[name].Perm, name)
	}
	// Every admin method a caller app could abuse stays owner-only.
	for _, m := range ms {
		assert.Zero(t, m.Perm&^admin.Owner, m.Name)
	}
	t.Logf("%d methods, %d verbs", len(ms), len(verbs))
}

// TestUnavailableFeatureSaysWhy: a feature this run does without keeps
// its methods, answering invalid_state with the reason instead of a
// retryable busy that never clears.
func TestUnavailableFeatureSaysWhy(t *testing.T) {
	ms := (&System{}).adminMethods()
	i := slices.IndexFunc(ms, func(m admin.Method) bool { return m.Name == "app.list" })
	require.GreaterOrEqual(t, i, 0)
	_, err := ms[i].Handle(context.Background(), &admin.Call{Method: "app.list", Params: json.RawMessage("{}")})
	var e *errcode.Error
	require.True(t, errors.As(err, &e), "err %v", err)
	assert.Equal(t, errcode.InvalidState, e.Code)
	assert.Equal(t, "unavailable", e.Details["reason"])
	assert.Contains(t, e.Text, "agentosd supervise")
	assert.False(t, e.Code.Retryable())
}

// scripted is a model.Provider that records it was asked.
type scripted struct{ asked int }

func (p *scripted) Stream(context.Context, *model.Request) (model.Stream, error) {
	p.asked++
	return nil, errors.New("asked")
}

// TestInlineScriptsWithoutModel: stdio's model source hands a prompt that
// is its own script to the scripted provider when nothing is configured,
// fails any other prompt with model_not_configured naming the commands
// to run, and steps aside once a real model is usable.
func TestInlineScriptsWithoutModel(t *testing.T) {
	user := func(text string) *model.Request {
		return &model.Request{Messages: []model.Message{{Role: model.RoleUser, Text: text}}}
	}
	src := inlineScripts{src: noModel{}, scripted: inlineOnly{&scripted{}}}
	_, p, _, ok := src.Lease()
	require.True(t, ok)
	_, err := p.Stream(context.Background(), user("hello"))
	var e *errcode.Error
	require.True(t, errors.As(err, &e), "err %v", err)
	assert.Equal(t, errcode.ModelNotConfigured, e.Code)
	for _, cmd := range []string{"--model-script", "agentosd ctl model set"} {
		assert.Contains(t, e.Text, cmd)
	}
	inner := &scripted{}
	src = inlineScripts{src: noModel{}, scripted: inlineOnly{inner}}
	_, p, _, _ = src.Lease()
	p.Stream(context.Background(), user("#!agentos-script\nsteps: []"))
	assert.Equal(t, 1, inner.asked, "the inline script reached the scripted provider")

	real := &scripted{}
	src = inlineScripts{src: engine.StaticModel(model.Config{Provider: "openai"}, real), scripted: inlineOnly{inner}}
	cfg, p, _, ok := src.Lease()
	require.True(t, ok)
	assert.Equal(t, "openai", cfg.Provider)
	p.Stream(context.Background(), user("#!agentos-script\nsteps: []"))
	assert.Equal(t, 1, real.asked, "a configured model answers, script or not")
}

// noModel is a source without a usable model.
type noModel struct{}

func (noModel) Current() (model.Config, model.Provider, bool) { return model.Config{}, nil, false }
