// Package controller is the runtime's side of ACI, the Agent Capability
// Interface: the AgentOS runtime is the controller that discovers the
// capabilities installed apps expose, wakes apps that are not running, and
// offers each capability to the model as its own typed tool.
//
// # What ACI is
//
// A controlled app declares typed capabilities (an id, a description the
// model reads, typed params and results, flags, an optional required
// permission, whether every call needs the user's confirmation) and serves
// them on its own socket, "@aci.<package>.<service>", with the framing of
// runtime/aci/wire. runtime/sdk/aci is the app's SDK. Upstream (the Quor-a
// ZorvAI apps) ran this over Android Binder and gave the model two generic
// tools, aci_list and aci_call; here every capability is a catalog entry of
// kind aci named "aci__<package>__<service>__<capability>" (the catalog's
// naming rules, hash suffixes included), whose JSON Schema comes from the
// declared params, and whose risk is HIGH when the capability is flagged
// dangerous or asks for confirmation (WRITE otherwise). toolScope (the
// package as the plugin, the capability id as the tool), session modes,
// consent and quotas apply to it exactly as to a plugin tool, because the
// broker runs the same flow for both.
//
// # Discovery and waking
//
// Discover reads the package table for services of kind "aci", fetches
// each one's capabilities and negotiates the protocol through the
// aci_protocol capability (aci-protocol-v1). A service that does not
// answer is woken through the supervisor's launcher, as upstream's WAKE
// broadcast, and retried with upstream's rebind backoff (800 ms × 2ⁿ,
// clamped at 8 s) on the runtime's clock, so tests run it in virtual time.
// Capabilities stay cached when an app stops; a call wakes it again.
//
// # The five permission layers
//
// Upstream documented five layers and enforced two. Every call here passes
// all five, in this order, before a byte reaches the callee:
//
//  1. The session's originating caller app holds the "aci" permission in
//     its bundle (app.json "permissions"; upstream's ai.aci.permission.CALL).
//     The owner's own sessions (desktop, shell) hold it by definition.
//  2. Kernel identity on both sides: the listener's uid must be the
//     callee package's (wire.Client checks SO_PEERCRED before sending), and
//     the callee learns its peer from the kernel; callerPkg is only the
//     runtime vouching for the originating app.
//  3. The callee's allow-list hook (sdk Options.Allow) sees that verified
//     caller.
//  4. A capability's requirePermission must be held by the originating
//     caller app (upstream serialized it and never checked it).
//  5. Dangerous or confirm capabilities are HIGH: the broker shows a consent
//     card for every call, and the callee receives user_confirmed=true only
//     when the owner answered it (Call's Confirmed); a model can never pass
//     user_confirmed itself.
//
// # Calls
//
// A call runs under the capability's own budget (syncTimeoutMs) or 15 s;
// when the budget passes or the task is cancelled the connection closes,
// which ends the handler's context in the callee (no leaked work). With a
// progress sink the call is a callAsync and each progress frame goes to the
// sink (the broker writes tool.progress, ACP shows a tool_call_update).
// Large results are read by their fields (wire.Expand: "<key>_gz" and
// "<key>_len"), never by the capability's name. Every call, refused or
// not, is audited: caller app, capability, outcome, code, duration
// (`agentosd ctl aci audit`).
package controller
