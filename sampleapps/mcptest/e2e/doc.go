// Package e2e holds the extension-host acceptance suite (spec §10.8, the
// 25 cases of tests/device/mcp-plugin/run.py) as Go integration tests
// against real processes: `agentosd supervise` as root starts `agentosd
// serve` as the runtime's uid, serve starts `agentosd ext`, the mcptest
// app is installed as a signed bundle and started by the supervisor's
// launcher under its own uid. The owner drives everything through the
// admin API (`agentosd ctl`), and prompts come from a process running as
// the runtime's uid (the owner's own UI) through the caller channel, with
// the scripted model.
//
// The suite needs root and Linux; it skips otherwise. Every named check
// of a case is asserted by name.
package e2e
