// Package host is the extension host, the process `agentosd ext` that
// serve starts and watches (spec §1 ":ext", §6). It reads the package
// table and each installed bundle's plugin (assets/agent-plugin:
// plugin.json, optional mcp.json, skills) without starting any app,
// decides each plugin's status — READY, UNAVAILABLE (ASSETS_MISSING,
// MANIFEST_REJECTED, NO_USABLE_SERVER, NAME_CONFLICT) or
// SIGNATURE_CHANGED — and applies the discovery rules: new third-party
// plugins start off; an upgrade keeps the owner's policy; a rename or an
// uninstall clears the old name's policy; a new signer clears the policy,
// turns the plugin off and refuses enabling (not_ready) until the owner
// confirms, after which it is still off.
//
// Two files under <data>/ext keep what the host must not forget, each
// with a backup: registry.json, the registry memory (trusted signers,
// name owners, the tool lists last seen, so the catalog and its names
// come back after a restart without starting any app), which is never
// taken as empty when unreadable (every plugin must then be confirmed
// again); and approval-policy.json, the owner's enable switches and
// "always allow" settings, which fails closed when unreadable (every
// plugin off, writes refused unavailable) until `plugins policy reset`.
//
// For each usable server of a ready plugin the host keeps a connection
// manager (package internal/provider) that starts the app through the
// launcher on first use. The whole catalog — final names, sources,
// schemas, risks, switches, approvals — and the skills catalog are
// pushed to serve on every change (ServeLink). Serve calls back for
// tool calls, read_skill's files, "always allow" and the owner's
// operations (Admin).
package host
