package daemon

import (
	"context"
	"path/filepath"

	"github.com/agentoslab/agentlab/runtime/aci/controller"
	"github.com/agentoslab/agentlab/runtime/admin"
	"github.com/agentoslab/agentlab/runtime/apps/appadmin"
	"github.com/agentoslab/agentlab/runtime/bridge"
	"github.com/agentoslab/agentlab/runtime/callerchan"
	"github.com/agentoslab/agentlab/runtime/clock/labclock"
	"github.com/agentoslab/agentlab/runtime/console"
	"github.com/agentoslab/agentlab/runtime/errcode"
	"github.com/agentoslab/agentlab/runtime/ext/broker"
	"github.com/agentoslab/agentlab/runtime/modelconf"
	"github.com/agentoslab/agentlab/runtime/platform"
	"github.com/agentoslab/agentlab/runtime/quota"
	"github.com/agentoslab/agentlab/runtime/supervise"
)

// CtlVerbs is the whole `agentosd ctl` verb table: the admin API's own
// and every feature's, whatever a running runtime has (it answers for a
// feature it runs without).
func CtlVerbs() []admin.Verb {
	var vs []admin.Verb
	for _, f := range [][]admin.Verb{
		admin.Verbs(), modelconf.CtlVerbs(), callerchan.CtlVerbs(), bridge.CtlVerbs(), broker.CtlVerbs(), appadmin.Verbs(),
		labclock.CtlVerbs(), controller.CtlVerbs(), console.CtlVerbs(), quota.CtlVerbs(), sessionVerbs(),
	} {
		vs = append(vs, f...)
	}
	return vs
}

// Reasons an admin method cannot be served by this runtime.
const (
	noSupervisor = "this runtime was started without a supervisor (agentosd supervise as root): it has no package table and cannot install or start apps"
	noExtHost    = "this runtime runs built-in test tools instead of the extension host"
	noDesktop    = "desktop access is off in this runtime's test mode (serve --allow-own-uid serves ACP uid-gated instead)"
	fixedModel   = "this run's model was fixed at start (--model, --model-script); it cannot be changed"
	noConsole    = "this runtime serves no web console (agentosd stdio)"
	noACI        = "this runtime has no ACI controller: it needs the package table (a supervisor) and the extension host's broker"
	noQuota      = "this runtime counts no caller quotas (agentosd stdio serves its one caller)"
	noLabclock   = "this runtime was started without its clock file (agentosd serve opens it): it runs on the real clock"
)

// adminMethods is the admin API's method table: every feature's methods
// bound to the subsystem that serves them. A feature this run does
// without keeps its names, answering why (unavailable).
func (s *System) adminMethods() []admin.Method {
	var ms []admin.Method
	add := func(m []admin.Method) { ms = append(ms, m...) }
	if s.Models != nil {
		add(modelconf.AdminMethods(s.Models))
	} else {
		add(unavailable(fixedModel, modelconf.AdminMethods(nil)))
	}
	add(callerchan.AdminMethods(s.Callers, s.Caller))
	if s.Bridge != nil {
		add(bridge.AdminMethods(s.Bridge))
	} else {
		add(unavailable(noDesktop, bridge.AdminMethods(nil)))
	}
	if s.Broker != nil {
		add(broker.AdminMethods(s.Broker))
	} else {
		add(unavailable(noExtHost, broker.AdminMethods(nil)))
	}
	if s.Apps != nil {
		add(appadmin.Methods(s.Apps, s.Launcher))
	} else {
		add(unavailable(noSupervisor, appadmin.Methods(nil, nil)))
	}
	if s.ACI != nil {
		add(controller.AdminMethods(s.ACI))
	} else {
		add(unavailable(noACI, controller.AdminMethods(nil)))
	}
	if s.opts.Labclock != nil {
		add(labclock.AdminMethods(s.opts.Labclock))
	} else {
		add(unavailable(noLabclock, labclock.AdminMethods(nil)))
	}
	add(sessionMethods(s.Store))
	if s.Quota != nil {
		add(quota.AdminMethods(s.Quota))
	} else {
		add(unavailable(noQuota, quota.AdminMethods(nil)))
	}
	if s.Console != nil {
		add(console.AdminMethods(s.Console))
	} else {
		add(unavailable(noConsole, console.AdminMethods(nil)))
	}
	return ms
}

// storeFile is the store's database in the data directory.
const storeFile = "agentos.db"

// statusSections are the sections of `agentosd ctl status`.
func (s *System) statusSections() []admin.StatusSection {
	var secs []admin.StatusSection
	if s.Apps != nil {
		secs = append(secs, appadmin.Status(s.Apps, supervise.RuntimeEnv{Root: s.opts.Root})...)
	}
	if s.Bridge != nil {
		secs = append(secs, bridge.StatusSection(s.Bridge))
	}
	secs = append(secs, callerchan.StatusSection(s.Callers, s.Caller))
	if s.Models != nil {
		secs = append(secs, modelconf.StatusSection(s.Models))
	}
	// What the runtime found on this system: Android or not, its zone,
	// temp folder and resolver.
	secs = append(secs, admin.StatusSection{Name: "platform", Read: func(context.Context) (any, error) {
		return platform.Current().Info(), nil
	}})
	// The process's own figures, for soaks (agentlab run --soak).
	secs = append(secs, admin.ProcessSection(admin.StoreFiles(filepath.Join(s.opts.Data, storeFile))...))
	return secs
}

// unavailable keeps ms's names, permissions and summaries with handlers
// that answer invalid_state saying why (details.reason "unavailable").
func unavailable(why string, ms []admin.Method) []admin.Method {
	out := make([]admin.Method, len(ms))
	for i, m := range ms {
		m.Handle = func(context.Context, *admin.Call) (any, error) {
			return nil, errcode.New(errcode.InvalidState, why).WithDetails(map[string]any{"reason": "unavailable"})
		}
		out[i] = m
	}
	return out
}
