// Package supervise is `agentosd supervise`, the root supervisor that the
// Magisk/KernelSU module's service.sh starts at boot. It keeps one
// instance (a locked pid file), waits for sys.boot_completed=1 when
// getprop exists, starts `agentosd serve` as the runtime's own non-root
// uid with the inet group (3003, Android's network permission) and its
// data directory owned by that uid, and restarts it after a
// death only when the runtime's last heartbeat showed tasks — an idle
// runtime that died is left dead until kicked (SIGUSR1). Restarts back
// off 1, 2, 4 … 60 s (reset after 60 s up); 5 deaths in 10 minutes put it
// in safe mode: a safe_mode marker is written and the runtime is started
// with AGENTOS_SAFE_MODE=1, which refuses new tasks with safe_mode;
// removing the marker (agentosd supervise leave-safe-mode, the module's
// action.sh) leaves safe mode; so does the runtime's request (the owner's
// admin safemode.leave writes runtime/leave_safe_mode, and the supervisor
// removes the marker at its next poll). An Android API level outside --min-api and
// --max-api is safe mode unsupported_api, which cannot be left. The
// supervisor also hosts the launcher (package runtime/apps/launcher) that
// installs apps and starts their processes under their uids, and it
// exits when $MODDIR/disable or $MODDIR/remove appears.
//
// # Files (under the root, /data/agentos by default)
//
//	supervisor/            0700 root   supervisor.pid (flock), supervisor.log (256 KiB rotation), runtime.log
//	status                 0644 root   key=value: protocol state reason seq since deaths runtime_pid backoff_ms safe_mode module_version module_version_code boot_count
//	boot_count             0644 root   supervisor starts on this root (one a boot)
//	safe_mode              0644 root   marker: present = safe mode (agentosd supervise leave-safe-mode removes it)
//	bundled                0644 root   "<package> <result>" per bundled app of $MODDIR/app/apps.list, this boot
//	runtime/               0700 uid    the runtime's data (serve --data); heartbeat written by the runtime, leave_safe_mode its request to leave safe mode
//	apps/                  0755 root   package table, code/, data/ (see runtime/apps)
//	bin/agentosd           0755 root   this binary, copied where the runtime's uid can run it
//
// # Bundled apps
//
// Before the first runtime start of a boot the supervisor installs the
// module's bundled apps ($MODDIR/app/apps.list, see BundledList): a
// missing or older one is installed or upgraded, an equal or newer one is
// left, one by another signer is left (sig_mismatch), and nothing is ever
// downgraded or uninstalled.
//
// # The runtime's side
//
// The runtime gets a clean environment (no TMPDIR: runtime/platform makes
// one under HOME on Android): PATH, HOME (its data directory),
// AGENTOS_ROOT (the root above), AGENTOS_SAFE_MODE=1 in safe mode, and
// TZ/ANDROID_* when the supervisor has them. It writes <data>/heartbeat
// (key=value lines pid, tasks, at, state; state=stopping on a graceful
// exit), reads <root>/status for `ctl status`, the package table from
// <root>/apps, and talks to the launcher on launcher.SocketName(names).
package supervise
