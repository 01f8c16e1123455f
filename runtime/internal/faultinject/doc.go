// Package faultinject breaks named runtime rules on purpose, so the lab
// can show that the scenarios guarding a rule fail when the rule is
// broken (agentlab mutate and its kill matrix, scenarios/killmatrix).
//
// It exists only in builds with the agentos_faultinject build tag. In
// every other build Enabled is the constant false, so each call site,
// written as
//
//	if faultinject.Enabled && faultinject.Active(faultinject.ScopeWiden) { … }
//
// is dead code the compiler removes, and Active always answers false.
//
// In a tagged build a fault is active when its name is listed in the
// environment variable AGENTOS_FAULT, or in the file faultinject under
// $AGENTOS_ROOT (the supervisor's root, which serve gets in its
// environment; the lab writes it as root, the runtime re-reads it at most
// twice a second). Names are separated by commas, bars or white space:
//
//	AGENTOS_FAULT=scope_widen|app_answers_consent
//
// The faults, one per promise, each a one-line mutation where the rule is
// enforced (a rule enforced at two places is broken at both):
//
//	scope_widen                  a session's toolScope no longer narrows its tools (spec §2.4)
//	app_answers_consent          any uid may use the owner's admin socket, so an app can answer consent (spec §5.4)
//	revoke_keeps_tasks           revoking a caller app closes its channels but leaves its tasks running (spec §5.6)
//	spoofed_caller_name          the name an app claims in initialize's clientInfo becomes its package on the card
//	cooldown_ignored             a denied app is asked again at once, not after the deny cooldown
//	high_offers_always_allow     a HIGH card offers ALWAYS_ALLOW (spec §5.4: HIGH gets only ALLOW_ONCE and DENY)
//	unoffered_answer_allows      an answer the card did not offer counts as ALLOW_ONCE, not DENY
//	consent_timeout_allows       an unanswered card allows once at its timeout instead of denying
//	pairing_attempts_unlimited   wrong pairing codes never void the code (no too_many_attempts)
//	pairing_code_reusable        a pairing code stays valid after it paired a computer
//	desktop_any_uid              the desktop socket admits every peer uid, not only root and shell
//	read_skill_dotdot            read_skill accepts ".." path segments
//	session_mcp_loopback         a session's MCP server may be on a loopback address
//	model_key_logged             setting the model key writes the key into the runtime's log
//	cross_app_session_load       an app may open (load, fork, delete) another owner's session
//	provider_peer_uid_unchecked  the runtime talks to a provider socket whatever uid serves it (the launcher's
//	                             socket_taken checks and the provider's own peer check)
//	signature_keeps_grant        an app updated by another signer keeps its grant
//	busy_quota_ignored           an app may run prompts concurrently past its busy limit
//	plugins_enabled_by_default   a newly discovered plugin starts enabled
//	oversize_closes_channel      a tool_call update goes out whole (no rawInput marker) and an oversize
//	                             outgoing message ends the connection instead of being answered locally
//	revoke_leaves_connected      revoking a caller app leaves its channels open
//	aci_peer_uid_unchecked       the ACI controller sends its request to whatever uid holds a controlled
//	                             app's socket (permission layer 2: a squatter gets the call)
//	aci_cap_permission_unchecked a capability's required permission is not checked against the session's
//	                             originating app (permission layer 4, as upstream)
//	aci_confirm_not_high         a dangerous or confirm capability is a WRITE tool, not HIGH: its card offers
//	                             remembering and a remembered call runs unasked (permission layer 5)
//	idle_death_restarted         the supervisor restarts a runtime that died idle (spec §11.7: only one with tasks)
//	desktop_off_keeps_connected  turning desktop access off leaves the socket and the connected computers
//	autoselect_ignores_scope     session auto-select may pick a session whose toolScope differs from the one
//	                             requested (spec §2.4)
//	channel_slot_leak            a closed caller connection keeps its place under the per-app cap of 8
//	cancel_ignored               session/cancel is accepted and does nothing: the turn streams on (spec §2.8)
//	soak_leak                    every prompt leaks a goroutine and a descriptor (caught by a soak, not by
//	                             a scenario: scenarios/soak)
package faultinject

// Names of the faults.
const (
	ScopeWiden                = "scope_widen"
	AppAnswersConsent         = "app_answers_consent"
	RevokeKeepsTasks          = "revoke_keeps_tasks"
	SpoofedCallerName         = "spoofed_caller_name"
	CooldownIgnored           = "cooldown_ignored"
	HighOffersAlwaysAllow     = "high_offers_always_allow"
	UnofferedAnswerAllows     = "unoffered_answer_allows"
	ConsentTimeoutAllows      = "consent_timeout_allows"
	PairingAttemptsUnlimited  = "pairing_attempts_unlimited"
	PairingCodeReusable       = "pairing_code_reusable"
	DesktopAnyUID             = "desktop_any_uid"
	ReadSkillDotDot           = "read_skill_dotdot"
	SessionMCPLoopback        = "session_mcp_loopback"
	ModelKeyLogged            = "model_key_logged"
	CrossAppSessionLoad       = "cross_app_session_load"
	ProviderPeerUIDUnchecked  = "provider_peer_uid_unchecked"
	SignatureKeepsGrant       = "signature_keeps_grant"
	BusyQuotaIgnored          = "busy_quota_ignored"
	PluginsEnabledByDefault   = "plugins_enabled_by_default"
	OversizeClosesChannel     = "oversize_closes_channel"
	RevokeLeavesConnected     = "revoke_leaves_connected"
	ACIPeerUIDUnchecked       = "aci_peer_uid_unchecked"
	ACICapPermissionUnchecked = "aci_cap_permission_unchecked"
	ACIConfirmNotHigh         = "aci_confirm_not_high"
	IdleDeathRestarted        = "idle_death_restarted"
	DesktopOffKeepsConnected  = "desktop_off_keeps_connected"
	AutoSelectIgnoresScope    = "autoselect_ignores_scope"
	ChannelSlotLeak           = "channel_slot_leak"
	CancelIgnored             = "cancel_ignored"
	SoakLeak                  = "soak_leak"
)

// Faults lists every fault.
var Faults = []string{
	ScopeWiden, AppAnswersConsent, RevokeKeepsTasks, SpoofedCallerName, CooldownIgnored,
	HighOffersAlwaysAllow, UnofferedAnswerAllows, ConsentTimeoutAllows, PairingAttemptsUnlimited,
	PairingCodeReusable, DesktopAnyUID, ReadSkillDotDot, SessionMCPLoopback, ModelKeyLogged,
	CrossAppSessionLoad, ProviderPeerUIDUnchecked, SignatureKeepsGrant, BusyQuotaIgnored,
	PluginsEnabledByDefault, OversizeClosesChannel, RevokeLeavesConnected, ACIPeerUIDUnchecked,
	ACICapPermissionUnchecked, ACIConfirmNotHigh, IdleDeathRestarted, DesktopOffKeepsConnected, AutoSelectIgnoresScope,
	ChannelSlotLeak, CancelIgnored, SoakLeak,
}

// Names of the switches.
const (
	// Env is the environment variable listing the active faults.
	Env = "AGENTOS_FAULT"
	// FileName is the file under $AGENTOS_ROOT listing them.
	FileName = "faultinject"
)
