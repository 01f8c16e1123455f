// Package boot is the init of a virtual device: PID 1 of the device's pid
// namespace, started by the host with fresh mount, pid, net, uts and ipc
// namespaces. It composes the device's root (the host's /usr, /bin and
// libraries read-only, its zoneinfo hidden; /etc a link to /system/etc; the
// device's /data, /system, /sdcard and /apex from its host folder; a fresh
// /proc and /dev with netd's socket bound in), brings lo up, enforces the
// inet group (package paranoid), runs the property service and the su
// daemon, boots the root solution's modules, serves adb on the listener
// the host passed in, reaps every zombie, and exits to halt (0) or to ask
// the host for a reboot (ExitReboot).
package boot
