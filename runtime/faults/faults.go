// Package faults is the catalog of the runtime's injectable faults: each
// fault's name, the promise it breaks and the scenarios that guard that
// promise. The switch that breaks them lives in the runtime
// (runtime/internal/faultinject, in tagged builds only); this
// package holds no fault code, so the lab (agentlab mutate) and the
// scenario tests can name the faults without reaching into the runtime.
package faults

// Fault is one injectable fault.
type Fault struct {
	// Name is what AGENTOS_FAULT and the fault file list.
	Name string
	// Promise is the rule the fault breaks, as the spec states it.
	Promise string
	// Guards are the scenarios whose checks must go red under the fault: a
	// targeted selection that proves it is caught without the full suite.
	// Guards is empty only for soak_leak: a leak shows over many
	// iterations, never in one scenario; scenarios/soak proves it with
	// agentlab run --soak.
	Guards []string
}

// All lists every fault, in the order of the runtime's catalog.
var All = []Fault{
	{"scope_widen", "a session's toolScope narrows its tools (§2.4)",
		[]string{"security/compromised-scope", "third-party/catalog-tools"}},
	{"app_answers_consent", "only the owner's uids use the admin socket, so no app answers consent (§5.4)",
		[]string{"security/self-consent"}},
	{"revoke_keeps_tasks", "revoking a caller app cancels its tasks (§5.6)",
		[]string{"third-party/revoke-closes", "third-party/revoke-after-detach", "sms/revoke", "notes/revoke"}},
	{"spoofed_caller_name", "the card names the caller by its uid's package, never by a claimed name",
		[]string{"third-party/spoofed-name", "aci/spoofed-caller"}},
	{"cooldown_ignored", "a denied app is not asked again before the deny cooldown ends",
		[]string{"third-party/denied-cooldown"}},
	{"high_offers_always_allow", "a HIGH card offers only ALLOW_ONCE and DENY (§5.4)",
		[]string{"consent/sample-apps", "apps/e2e-failures"}},
	{"unoffered_answer_allows", "an answer the card did not offer counts as DENY",
		[]string{"consent/surface"}},
	{"consent_timeout_allows", "an unanswered card denies at its timeout",
		[]string{"fault/consent-timeout-short"}},
	{"pairing_attempts_unlimited", "the fifth wrong pairing code voids the code (too_many_attempts)",
		[]string{"desktop/pairing"}},
	{"pairing_code_reusable", "a pairing code pairs one computer, once",
		[]string{"desktop/pairing", "security/acp-ts-client"}},
	{"desktop_any_uid", "the desktop socket admits only root and shell",
		[]string{"desktop/uid-admission"}},
	{"read_skill_dotdot", "read_skill refuses \"..\" segments (§6.5)",
		[]string{"security/read-skill-traversal"}},
	{"session_mcp_loopback", "a session's MCP server is never on a loopback address",
		[]string{"third-party/sessions"}},
	{"model_key_logged", "the model key never reaches a log",
		[]string{"security/model-key-not-logged"}},
	{"cross_app_session_load", "an app cannot open another owner's session",
		[]string{"security/cross-app-sessions"}},
	{"provider_peer_uid_unchecked", "the runtime talks to a provider's socket only when the package's uid serves it",
		[]string{"ext/call", "ext/no-permission", "security/provider-squat"}},
	{"signature_keeps_grant", "an app updated by another signer loses its grant and is asked again",
		[]string{"third-party/signature-changed"}},
	{"busy_quota_ignored", "an app runs one prompt at a time (busy)",
		[]string{"quota/busy"}},
	{"plugins_enabled_by_default", "a newly discovered plugin starts off",
		[]string{"ext/lifecycle", "apps/e2e-prepare"}},
	{"oversize_closes_channel", "a long tool call is shown truncated and an oversize message answered locally: the connection stays (§4.2)",
		[]string{"security/oversize-stays-open"}},
	{"revoke_leaves_connected", "revoking a caller app closes its channels (§5.6)",
		[]string{"third-party/revoke-closes"}},
	{"aci_peer_uid_unchecked", "the ACI controller sends nothing to a socket its app's uid does not hold (ACI layer 2)",
		[]string{"aci/socket-squat"}},
	{"aci_cap_permission_unchecked", "a capability's required permission is checked against the session's originating app (ACI layer 4)",
		[]string{"aci/cap-permission"}},
	{"aci_confirm_not_high", "a dangerous or confirm capability asks on a HIGH card every call (ACI layer 5)",
		[]string{"aci/consent-dangerous"}},
	{"idle_death_restarted", "the supervisor restarts a runtime that died only when its last heartbeat showed tasks (§11.7)",
		[]string{"fault/supervisor"}},
	{"desktop_off_keeps_connected", "turning desktop access off closes the socket and every desktop connection (§8)",
		[]string{"desktop/idle", "desktop/pairing"}},
	{"autoselect_ignores_scope", "session auto-select picks only a session whose toolScope equals the requested one (§2.4)",
		[]string{"third-party/auto-select"}},
	{"channel_slot_leak", "a closed caller connection frees its place under the per-app connection cap (§10.2 reconnect)",
		[]string{"channel/reconnect-sdk"}},
	{"cancel_ignored", "session/cancel stops the session's running turn (§2.8)",
		[]string{"channel/cancel-sdk"}},
	{"soak_leak", "a prompt's goroutines and descriptors end with it", nil},
}

// Names are the faults' names, in order.
func Names() []string {
	out := make([]string, len(All))
	for i, f := range All {
		out[i] = f.Name
	}
	return out
}

// Lookup returns the fault called name.
func Lookup(name string) (Fault, bool) {
	for _, f := range All {
		if f.Name == name {
			return f, true
		}
	}
	return Fault{}, false
}
