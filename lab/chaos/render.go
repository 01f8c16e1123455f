package chaos

import (
	"bytes"
	"fmt"
	"strings"

	"gopkg.in/yaml.v3"
)

// The apps and tools a sequence uses: two copies of the test caller (the
// second one reaches for the first one's sessions) and the test plugin,
// whose echo tool is the scoped sessions' one tool.
const (
	// CallerPrefix starts both callers' package names; Spec.Callers ends
	// them, so every sequence run has callers of its own (an app's hourly
	// prompt quota would otherwise carry over from run to run).
	CallerPrefix = "org.agentos.test.acp.chaos."
	Plugin       = "org.agentos.test.mcp.plugin/agent-plugin"
	EchoTool     = "mcp__mcptest__test__echo"
	runtimeLog   = "/data/agentos/supervisor/runtime.log"
	modelKey     = "/data/agentos/runtime/model.key"
	safeMarker   = "/data/agentos/safe_mode"
	moduleAction = "/data/adb/modules/agentos/action.sh"
	ctl          = "/data/adb/modules/agentos/bin/agentosd ctl"
)

// Spec says what a sequence's scenario is besides its actions.
type Spec struct {
	Name        string
	Seed        int64
	Description string
	// Callers names the sequence's two caller apps: CallerPrefix +
	// Callers + ".a" and ".b" (a package name segment; default "x").
	Callers string
	// Fault, with FaultFile, makes the scenario's first setup step write
	// the fault into the fault-injection runtime's fault file (which the
	// product runtime ignores): a shrunk violation found under a fault
	// fails again when run on that build.
	Fault, FaultFile string
}

// Scenario writes seq as a scenario file whose model is the chaos model
// of sp.Seed. Every action's steps are followed by its invariants'
// checks, named "<invariant>@<action id>", and by the check that no
// revoked caller has a running task.
func Scenario(sp Spec, seq []Action) []byte {
	name, seed, description := sp.Name, sp.Seed, sp.Description
	tag := sp.Callers
	if tag == "" {
		tag = "x"
	}
	pk := callers{a: CallerPrefix + tag + ".a", b: CallerPrefix + tag + ".b"}
	su := setup(pk)
	if sp.Fault != "" {
		su = append([]any{
			om{{"run", om{{"shell", "echo " + sp.Fault + " > " + sp.FaultFile + " && chmod 0644 " + sp.FaultFile}, {"su", true}}}},
			// The runtime re-reads the file at most twice a second.
			om{{"sleep", "1s"}},
		}, su...)
	}
	doc := om{
		{"name", name},
		{"description", folded(description)},
		{"tags", []any{"chaos"}},
		{"needs", om{{"root", true}, {"apps", []any{"acptestclient", "mcptest"}}}},
		{"attempts", 1},
		{"timeout", fmt.Sprintf("%dm", 2+len(seq))},
		{"model", om{{"chaos", om{{"seed", seed}}}}},
		{"scripts", om{{"working", om{{"steps", []any{om{{"text", "working"}, {"hangAfter", 1}}}}}}}},
		{"setup", su},
	}
	var steps []any
	for _, a := range seq {
		steps = append(steps, a.steps(pk)...)
		steps = append(steps, check(fmt.Sprintf("revokedHasNoTask@%d", a.ID),
			om{{"of", "callers"}, {"path", `.callers[?state=="denied"].usage.activeTasks`}, {"all", om{{"eq", 0}}}}))
	}
	// The callers leave the registry, whose table of apps is bounded
	// (allowed entries are never evicted).
	for _, pkg := range []string{pk.a, pk.b} {
		steps = append(steps, om{{"callers", om{{"remove", pkg}}}, {"allow_error", true}})
	}
	doc = append(doc, kv{"steps", steps})
	var b bytes.Buffer
	b.WriteString("# yaml-language-server: $schema=../scenario.schema.json\n")
	b.WriteString("# Written by agentlab chaos: " + describeSeq(seq) + "\n")
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(doc); err != nil {
		panic(err) // om holds only plain values
	}
	return b.Bytes()
}

func describeSeq(seq []Action) string {
	parts := make([]string, len(seq))
	for i, a := range seq {
		parts[i] = a.String()
	}
	return strings.Join(parts, " ")
}

// callers are a sequence's two caller apps: a prompts, b reaches for
// a's sessions.
type callers struct{ a, b string }

// leaveSafeMode takes the runtime out of safe mode if it is in it: five
// runtime deaths in ten minutes (kill -9 is one) are a crash loop, which
// the supervisor answers with safe mode, refusing every prompt; a
// sequence starts, and goes on after a kill, with a runtime that serves.
func leaveSafeMode() []any {
	return []any{
		om{{"run", om{{"su", true}, {"shell", "if [ -e " + safeMarker + " ]; then sh " + moduleAction + "; fi"}}}},
		om{{"wait", om{
			{"until", om{{"all_of", []any{
				om{{"of", "status"}, {"path", ".supervisor.state"}, {"eq", "ok"}},
				om{{"of", "status"}, {"path", ".safeMode"}, {"eq", false}},
			}}}},
			{"timeout", "30s"}, {"interval", "200ms"},
		}}},
	}
}

func setup(pk callers) []any {
	out := append(leaveSafeMode(),
		// Callers an earlier sequence left (it failed before its last
		// steps) leave the registry, whose table of apps is bounded.
		om{{"run", om{{"su", true}, {"shell", ctl + " --json callers list | grep -o '\"packageName\": *\"" +
			strings.ReplaceAll(CallerPrefix, ".", "\\.") + "[^\"]*' | cut -d'\"' -f4 | " +
			"while read p; do " + ctl + " callers remove \"$p\" >/dev/null 2>&1; done; true"}}}},
		om{{"callers", om{{"config", om{}}}}},
		om{{"plugins", om{{"enable", []any{Plugin}}}}},
		om{{"tools", om{{"enable", []any{EchoTool}}}}},
		waitEcho(),
	)
	for _, pkg := range []string{pk.a, pk.b} {
		out = append(out,
			om{{"install", om{{"caller", pkg}}}},
			om{{"caller", om{{"app", pkg}, {"plan", []any{"raw_open"}}}}, {"save", "asked"}},
			om{{"callers", om{{"allow", pkg}}}},
		)
	}
	return append(out, om{{"consent", om{{"mode", "deny"}}}})
}

func waitEcho() om {
	return om{{"wait", om{
		{"until", om{{"of", "catalog"}, {"path", `.tools[?name=="` + EchoTool + `"].enabled`}, {"eq", true}}},
		{"timeout", "30s"},
	}}}
}

func activeTasks(pkg string, n int, checkName string) om {
	w := om{
		{"until", om{{"of", "callers"}, {"path", `.callers[?packageName=="` + pkg + `"].usage.activeTasks`}, {"eq", n}}},
		{"timeout", "15s"},
		{"interval", "200ms"},
	}
	if checkName != "" {
		w = append(w, kv{"check", om{{"name", checkName}}})
	}
	return om{{"wait", w}}
}

func check(name string, cond om) om {
	return om{{"check", append(om{{"name", name}}, cond...)}}
}

// terminal is oneTerminalState for the caller prompt at path in save: a
// stop reason and no error, or an error and no stop reason (the client
// reports an empty one).
func terminal(id int, save, path string) om {
	stop, errp := path+".stopReason", path+".error"
	return check(fmt.Sprintf("oneTerminalState@%d", id), om{{"any_of", []any{
		om{{"all_of", []any{
			om{{"saved", save}, {"path", stop}, {"matches", ".+"}},
			om{{"saved", save}, {"path", errp}, {"exists", false}},
		}}},
		om{{"all_of", []any{
			om{{"saved", save}, {"path", stop}, {"not", om{{"matches", ".+"}}}},
			om{{"saved", save}, {"path", errp}, {"exists", true}},
		}}},
	}}})
}

func consentMode(allow bool) om {
	m := "deny"
	if allow {
		m = "allow"
	}
	return om{{"consent", om{{"mode", m}}}}
}

// text is the prompt of action id: the chaos model's answers depend on
// it, so it names the action, not its place in the sequence.
func text(id int) string { return fmt.Sprintf("chaos action %d", id) }

func (a Action) steps(pk callers) []any {
	id := a.ID
	save := fmt.Sprintf("a%d", id)
	name := func(inv string) string { return fmt.Sprintf("%s@%d", inv, id) }
	switch a.Kind {
	case Prompt:
		newSess := om{{"as", "s"}}
		switch a.Scope {
		case ScopeEcho:
			newSess = append(newSess, kv{"scope", []any{om{{"plugin", "mcptest"}, {"tool", "echo"}}}})
		case ScopeNo:
			newSess = append(newSess, kv{"scope", []any{}})
		}
		out := []any{
			consentMode(a.Allow),
			om{{"caller", om{{"app", pk.a}, {"plan", []any{
				"connect",
				om{{"new", newSess}},
				om{{"prompt", om{{"session", "s"}, {"text", text(id)}, {"as", "p"}}}},
			}}}}, {"save", save}, {"timeout", "90s"}},
			terminal(id, save, ".r.p"),
		}
		switch a.Scope {
		case ScopeEcho:
			out = append(out, check(name("scopeNeverWidens"),
				om{{"saved", save}, {"path", ".r.p.toolCalls[*].tool"}, {"all", om{{"in", []any{"echo", EchoTool}}}}}))
		case ScopeNo:
			out = append(out, check(name("scopeNeverWidens"), om{{"saved", save}, {"path", ".r.p.toolCalls"}, {"len", 0}}))
		}
		if !a.Allow {
			out = append(out, check(name("consentAnswered"),
				om{{"saved", save}, {"path", `.r.p.toolCalls[?tool=="` + EchoTool + `"]`}, {"all", om{{"path", ".status"}, {"ne", "COMPLETED"}}}}))
		}
		return out
	case Cancel:
		return []any{
			om{{"caller", om{{"app", pk.a}, {"plan", []any{
				"connect",
				om{{"new", om{{"as", "s"}}}},
				om{{"prompt", om{{"session", "s"}, {"script", "working"}, {"background", true}, {"as", "p"}}}},
				om{{"wait_text", om{{"prompt", "p"}, {"text", "working"}}}},
				om{{"cancel", om{{"session", "s"}}}},
				om{{"await", om{{"prompt", "p"}}}},
			}}}}, {"save", save}, {"timeout", "60s"}},
			terminal(id, save, ".r.p"),
		}
	case Revoke:
		return []any{
			om{{"caller", om{{"app", pk.a}, {"plan", []any{
				"connect",
				om{{"new", om{{"as", "s"}}}},
				om{{"prompt", om{{"session", "s"}, {"script", "working"}, {"background", true}, {"as", "p"}}}},
				om{{"wait_text", om{{"prompt", "p"}, {"text", "working"}}}},
				om{{"wait_closed", om{{"timeout", "20s"}, {"as", "closed"}}}},
				om{{"await", om{{"prompt", "p"}, {"timeout", "20s"}}}},
			}}}}, {"save", save}, {"background", true}, {"timeout", "60s"}},
			activeTasks(pk.a, 1, ""),
			om{{"callers", om{{"revoke", pk.a}}}},
			activeTasks(pk.a, 0, name("revokedHasNoTask")+".task"),
			om{{"await", save}},
			check(name("revokedHasNoTask")+".result", om{{"saved", save}, {"path", ".r.p.stopReason"}, {"ne", "end_turn"}}),
			// A channel left open could still carry a result.
			check(name("revokedHasNoTask")+".closed", om{{"saved", save}, {"path", ".r.closed.closed"}, {"eq", true}}),
			om{{"callers", om{{"allow", pk.a}}}},
		}
	case ConsentTimeout:
		tool := fmt.Sprintf("chaos_timed_%d", id)
		return []any{
			om{{"consent", om{{"mode", "off"}}}},
			om{{"run", om{{"ctl", []any{"consent", "inject", "--timeout-ms", "3000", "--caller", "app", "--pkg", pk.a, "--tool", tool}}}}, {"save", save}},
			om{{"wait", om{
				{"until", om{{"of", "consent_pending"}, {"path", `[?toolName=="` + tool + `"]`}, {"count", 0}}},
				{"timeout", "15s"}, {"interval", "200ms"},
			}}},
			om{{"run", om{{"ctl", []any{"consent", "decision", "${" + save + ".json.requestId}"}}}}, {"save", save + "d"}},
			check(name("consentAnswered"), om{{"saved", save + "d"}, {"path", ".json.decision"}, {"eq", "deny:timeout"}}),
			om{{"consent", om{{"mode", "deny"}}}},
		}
	case ConsentUnoffered:
		tool := fmt.Sprintf("chaos_high_%d", id)
		return []any{
			om{{"consent", om{{"mode", "off"}}}},
			om{{"run", om{{"ctl", []any{"consent", "inject", "--risk", "high", "--caller", "app", "--pkg", pk.a, "--tool", tool}}}}, {"save", save}},
			om{{"run", om{{"ctl", []any{"consent", "respond", "${" + save + ".json.requestId}", "ALLOW_FOR_SESSION"}}}}},
			om{{"run", om{{"ctl", []any{"consent", "decision", "${" + save + ".json.requestId}"}}}}, {"save", save + "d"}},
			check(name("consentAnswered"), om{{"saved", save + "d"}, {"path", ".json.decision"}, {"eq", "deny:user"}}),
			om{{"consent", om{{"mode", "deny"}}}},
		}
	case Busy:
		return []any{
			om{{"caller", om{{"app", pk.a}, {"plan", []any{
				"connect",
				om{{"new", om{{"as", "s1"}}}},
				om{{"prompt", om{{"session", "s1"}, {"script", "working"}, {"background", true}, {"cancel_after", "20s"}, {"as", "p1"}}}},
				om{{"wait_text", om{{"prompt", "p1"}, {"text", "working"}}}},
				om{{"new", om{{"as", "s2"}}}},
				om{{"prompt", om{{"session", "s2"}, {"text", text(id)}, {"as", "p2"}}}},
				om{{"cancel", om{{"session", "s1"}}}},
				om{{"await", om{{"prompt", "p1"}}}},
			}}}}, {"save", save}, {"timeout", "60s"}},
			check(name("onePromptAtATime"), om{{"saved", save}, {"path", ".r.p2.error.code"}, {"eq", "BUSY"}}),
		}
	case PluginDisable:
		return []any{
			om{{"plugins", om{{"disable", []any{Plugin}}}}},
			om{{"plugins", om{{"enable", []any{Plugin}}}}},
			waitEcho(),
		}
	case ProviderKill:
		return []any{om{{"kill", "mcptest"}}}
	case Kill9:
		return append([]any{
			consentMode(false),
			om{{"caller", om{{"app", pk.a}, {"plan", []any{
				"connect",
				om{{"new", om{{"as", "s"}}}},
				om{{"prompt", om{{"session", "s"}, {"text", text(id)}, {"as", "p"}}}},
			}}}}, {"save", save}, {"timeout", "90s"}},
			om{{"kill", "runtime"}},
			// An idle runtime killed is left dead until kicked: restart
			// kicks the supervisor.
			om{{"restart", "runtime"}},
		}, append(leaveSafeMode(), waitEcho(),
			om{{"caller", om{{"app", pk.a}, {"plan", []any{
				om{{"connect", om{{"max_wait", "30s"}}}},
				om{{"load", om{{"id", "${" + save + ".r.s.sessionId}"}, {"as", "l"}}}},
			}}}}, {"save", save + "l"}, {"timeout", "60s"}},
			check(name("committedSurvives"), om{{"saved", save + "l"}, {"path", ".r.l.historyText"}, {"contains", text(id)}}),
		)...)
	case Reboot:
		return []any{om{{"reboot", true}}, waitEcho()}
	case CrossApp:
		return []any{
			consentMode(false),
			om{{"caller", om{{"app", pk.a}, {"plan", []any{
				"connect",
				om{{"new", om{{"as", "s"}}}},
				om{{"prompt", om{{"session", "s"}, {"text", text(id)}, {"as", "p"}}}},
			}}}}, {"save", save}, {"timeout", "90s"}},
			om{{"caller", om{{"app", pk.b}, {"plan", []any{
				"connect",
				om{{"load", om{{"id", "${" + save + ".r.s.sessionId}"}, {"as", "l"}}}},
			}}}}, {"save", save + "b"}, {"timeout", "60s"}},
			check(name("noCrossAppData"), om{{"saved", save + "b"}, {"path", ".r.l.error.code"}, {"eq", "SESSION_NOT_FOUND"}}),
		}
	case ModelKey:
		return []any{
			om{{"run", om{{"ctl", []any{"model", "show"}}}}, {"save", save + "m"}},
			om{{"run", om{{"shell", "wc -c < " + runtimeLog}, {"su", true}}}, {"save", save + "w"}},
			om{{"run", om{{"ctl", []any{"model", "set", "--provider", "${" + save + "m.json.provider}",
				"--base-url", "${" + save + "m.json.baseUrl}", "--model", "${" + save + "m.json.model}"}}}}},
			om{{"run", om{{"su", true}, {"shell", "k=$(cat " + modelKey + "); [ -n \"$k\" ] || { echo nokey; exit 0; }; " +
				"from=$(( $(echo ${" + save + "w.stdout}) + 1 )); " +
				"for i in 1 2 3 4 5 6 7 8 9 10; do tail -c +$from " + runtimeLog + " | grep -q 'modelconf: model set' && break; sleep 0.2; done; " +
				"sleep 0.3; tail -c +$from " + runtimeLog + " | grep -cF \"$k\" || true"}}}, {"save", save}},
			check(name("keyInNoArtifact"), om{{"saved", save}, {"path", ".stdout"}, {"matches", `^0\s*$`}}),
		}
	case Pairing:
		pair := func(conn, as, code string) []any {
			return []any{
				om{{"raw_connect", om{{"socket", "acp"}, {"as", conn}}}},
				om{{"raw", om{{"conn", conn}, {"as", as}, {"send", om{{"jsonrpc", "2.0"}, {"id", 1}, {"method", "_org.agentos/pair"},
					{"params", om{{"version", 1}, {"code", code}, {"label", "agentlab-chaos"}}}}}}}},
			}
		}
		plan := []any{
			om{{"raw_connect", om{{"socket", "admin"}, {"as", "adm"}}}},
			om{{"raw", om{{"conn", "adm"}, {"as", "en"}, {"send", om{{"id", 1}, {"method", "desktop.enable"}}}}}},
		}
		for i := range 5 {
			plan = append(plan, pair(fmt.Sprintf("w%d", i), fmt.Sprintf("wrong%d", i), "${wrong:en.code}")...)
		}
		plan = append(plan, pair("v", "voided", "${secret:en.code}")...)
		plan = append(plan, om{{"raw", om{{"conn", "adm"}, {"as", "nc"}, {"send", om{{"id", 2}, {"method", "desktop.code"}}}}}})
		plan = append(plan, pair("ok", "paired", "${secret:nc.code}")...)
		plan = append(plan, pair("used", "codeUsed", "${secret:nc.code}")...)
		plan = append(plan, om{{"raw", om{{"conn", "adm"}, {"as", "off"}, {"send", om{{"id", 3}, {"method", "desktop.disable"}}}}}})
		reason := ".response.error.data.details.reason"
		return []any{
			om{{"caller", om{{"root", true}, {"plan", plan}}}, {"save", save}, {"timeout", "60s"}},
			check(name("pairingHolds")+".attempts", om{{"saved", save}, {"path", ".r.voided" + reason}, {"eq", "invalid_code"}}),
			check(name("pairingHolds")+".once", om{{"saved", save}, {"path", ".r.codeUsed" + reason}, {"eq", "invalid_code"}}),
		}
	}
	panic("chaos: unknown action kind " + string(a.Kind))
}

// om is a YAML mapping that keeps its keys' order.
type om []kv

type kv struct {
	k string
	v any
}

func (m om) MarshalYAML() (any, error) {
	n := &yaml.Node{Kind: yaml.MappingNode}
	for _, e := range m {
		var v yaml.Node
		if err := v.Encode(e.v); err != nil {
			return nil, err
		}
		n.Content = append(n.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: e.k}, &v)
	}
	if len(m) == 0 {
		n.Style = yaml.FlowStyle
	}
	return n, nil
}

// folded is text written as a folded block.
type folded string

func (f folded) MarshalYAML() (any, error) {
	return &yaml.Node{Kind: yaml.ScalarNode, Style: yaml.FoldedStyle, Value: string(f)}, nil
}
