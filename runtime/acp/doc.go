// Package acp is the runtime's ACP v1 agent (spec §2) on
// github.com/coder/acp-go-sdk's JSON-RPC connection.
//
// The SDK's typed AgentSideConnection is not used: it decodes params
// itself (case-insensitively, with its own error shapes) and logs raw
// lines. Instead Agent registers its own sorted method table on the SDK's
// lower-level Connection, reads params key by key, answers every failure
// through one function (toWire: errcode → JSON-RPC error) and sends the
// SDK's generated types. The SDK's logger only ever sees message texts,
// never message bodies.
//
// One Agent serves every connection of a runtime; each connection has its
// caller identity (from the transport), its negotiated extensions and its
// prompts in progress. A connection that goes away never cancels a task.
//
// Tool calls (updates.go): a tool_call carries the tool's title (its
// name when it has none or was not offered), the ACP kind of its
// annotations (ToolKind) and the final tool name in
// _meta."org.agentos".toolName, which is what programs identify a call
// by. While the phone asks its owner about a call, a desktop caller gets
// tool_call_updates that stay pending and whose content is the wait, then
// the allow (_meta."org.agentos".consent "pending" / "allowed"); app
// callers get none (the caller SDK reads a tool_call_update's content as
// the result).
package acp
