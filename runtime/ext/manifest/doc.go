// Package manifest validates the two files that describe a plugin,
// plugin.json (Agent Plugins 1.0 plus the "org.agentos" and "com.openai"
// extension partitions) and mcp.json (spec §6.2, §6.3), and resolves
// plugin name conflicts (§6.4).
//
// Validation is strict and collects every problem in one pass: a plugin
// with any Problem is rejected; parts that are valid but cannot be used
// (stdio or sse servers, plain-http URLs, unsafe icon or hook paths) are
// listed as Unsupported and never reject the plugin. Nothing here reads
// files: callers pass the bytes (at most MaxJSONBytes).
package manifest
