// Package module builds the AgentOS Magisk/KernelSU module zip: the
// installer scripts, module.prop and the agentosd binary for one ABI.
// The module installs nothing into /system, mounts nothing and adds no
// SELinux policy: at late_start service its service.sh starts
// `agentosd supervise`, which does the rest (runtime/supervise).
//
// # Contents
//
//	META-INF/com/google/android/update-binary   Magisk's recovery entry: loads Magisk's installer functions
//	META-INF/com/google/android/updater-script  "#MAGISK"
//	module.prop       id=agentos, name, version, versionCode, author, description
//	support-matrix.yaml  schema 1: matrix_version, api_min/api_max (35–37), magisk_min
//	                  (20400), kernelsu_min, min_free_mb (300), verified_fingerprints,
//	                  conflicting_modules; read by customize.sh at flash time
//	customize.sh      sourced by the installer: API level in the matrix's range,
//	                  Magisk or KernelSU ($KSU) at the matrix's minimum, APatch rejected,
//	                  the device's ABI, the free space on /data, no conflicting module
//	                  (one flagged remove is fine); a fingerprint not in the matrix warns
//	                  "unverified device"; writes install.prop (matrix_version, api, abi,
//	                  manager, manager_version_code, fingerprint, fingerprint_verified,
//	                  flashed_at); sets permissions
//	service.sh        late_start: MODDIR=${0%/*}; starts "$MODDIR/bin/agentosd supervise"
//	uninstall.sh      TERM the supervisor, KILL after 6 s, remove the supervisor's own
//	                  state (pid, logs, status, safe_mode, bin/); the runtime's store
//	                  and the apps with their data are kept (erase <root> by hand)
//	action.sh         the manager's action button: agentosd supervise leave-safe-mode
//	bin/agentosd      the binary (its ELF machine must match the ABI)
//	app/*.agentapp    bundled apps (--bundle), with app/apps.list; the supervisor
//	                  installs or upgrades them at boot, never downgrades or removes
//
// Pack writes the same bytes for the same options and binary: entries
// sorted, fixed timestamps and modes.
package module
