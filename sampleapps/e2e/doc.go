// Package e2e holds the sample apps' integration tests; it has no code of
// its own. The tests build the real binaries once per test binary
// (agentosd and the six sample apps, through sampleapps/internal/appbundle)
// and drive them as a device would:
//
//   - the official MCP TypeScript client (@modelcontextprotocol/sdk,
//     pinned in testdata/mcpclient/package-lock.json) lists and calls each
//     app's tools over `<app> mcp --stdio`;
//   - `agentosd supervise` (root) runs the runtime under its own uid; the
//     five apps and the test plugin are installed as signed bundles with
//     `agentosd ctl app install`, their plugins enabled, and the catalog
//     must hold the 44 documented tools with their risk (spec §9.7) under
//     their final names; tools are called through the runtime;
//   - the notes app's caller flow end to end (spec §10.4) on the scripted
//     model: `ctl app run … ask_agent` as the notes uid waits for the
//     owner's authorization, the model's event_create and alarm_create go
//     through consent cards, and the report's counts equal the calendar's
//     and the alarm's dumps.
//
// The runtime tests need root (real uids) and skip without it; the
// TypeScript test needs node and npm and skips without them.
package e2e
