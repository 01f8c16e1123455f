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
package acp
