// Package catalog holds the runtime's pure rules about tools: the names
// the model sees (spec §7), the toolScope a caller may attach to a session
// (§2.4), session modes (§2.5), risk levels (§5.1), the Catalog value the
// extension host pushes and the per-session view of it, and the
// validation of caller-supplied MCP servers (§2.9, §4.8).
//
// Everything here is deterministic and free of I/O; the package imports
// only the standard library and the runtime's small seam packages, so
// providers, the engine, the extension host and the lab can all use it.
//
// Naming in brief: a plugin tool (plugin, server, tool) becomes
// "mcp__<plugin>__<server>__<tool>" with every character outside
// [A-Za-z0-9_-] replaced by "_" (one per UTF-16 code unit); names longer
// than 64 characters, and every member of a group of colliding names, get
// a suffix from the SHA-256 of the raw identity. A session tool (server,
// tool) becomes "ses__<server>__<tool>" by the same rules. Assign and
// AssignSession depend only on the set of ids, never on their order.
package catalog
