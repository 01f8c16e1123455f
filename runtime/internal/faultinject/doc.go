// Package faultinject breaks named runtime rules on purpose, so the lab
// can show that the scenarios guarding a rule fail when the rule is
// broken (scenarios/faultinject_test.go).
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
// The faults:
//
//	scope_widen          a session's toolScope no longer narrows its tools (spec §2.4)
//	app_answers_consent  any uid may use the owner's admin socket, so an app can answer consent (spec §5.4)
//	revoke_keeps_tasks   revoking a caller app closes its channels but leaves its tasks running (spec §5.6)
package faultinject

// Names of the faults.
const (
	ScopeWiden        = "scope_widen"
	AppAnswersConsent = "app_answers_consent"
	RevokeKeepsTasks  = "revoke_keeps_tasks"
)

// Faults lists every fault.
var Faults = []string{ScopeWiden, AppAnswersConsent, RevokeKeepsTasks}

// Names of the switches.
const (
	// Env is the environment variable listing the active faults.
	Env = "AGENTOS_FAULT"
	// FileName is the file under $AGENTOS_ROOT listing them.
	FileName = "faultinject"
)
