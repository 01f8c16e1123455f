// Package broker is serve's side of the extension host. It starts
// `agentosd ext` as a child process and restarts it (1, 2, 4 … 60 s) when
// it dies — the runtime itself never does; it admits the host's link on
// transport.Names.Ext() only from that child (SO_PEERCRED uid and pid);
// it mirrors the catalog the host pushes; and it implements engine.Tools,
// the broker flow of spec §5.2:
//
//  1. the model's tool name is looked up in the session's catalog (plugin
//     tools, read_skill when skills exist, the session's own MCP servers)
//     under its toolScope and mode: anything hidden answers
//     tool_not_in_catalog with the same text and never asks the user;
//  2. the risk policy decides (consent.Requirement): READ runs, WRITE with
//     "always" or remembered for the session runs (consent.resolved with
//     reason policy or remembered), anything else asks the consent
//     coordinator (consent.requested, then consent.resolved);
//  3. tool.dispatched is written before the call leaves for the extension
//     host (or the session server), so a crash after it reads as result
//     unknown;
//  4. the host's answer becomes the result; the host dying mid-call is
//     tool_result_unknown.
//
// The owner's admin methods (consent …, plugins …, catalog, skills,
// skill, ext …) are AdminMethods(b) and their `agentosd ctl` verbs
// CtlVerbs(); the composition root (runtime/daemon) passes both on.
package broker
