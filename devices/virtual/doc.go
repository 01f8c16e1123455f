// Package virtual runs virtual Android devices on a Linux host: a process
// tree in its own mount, pid, net, uts and ipc namespaces with an
// Android-like root kept in a host folder, whose init speaks the real adb
// device protocol on a TCP listener on 127.0.0.1. A real adb server adopts
// it with "adb connect 127.0.0.1:<port>", and gadb and the adb CLI work
// against it as against a phone: shell (v1 and v2 with exit codes), sync
// (push/pull), localabstract:/tcp: forwards, reverse forwards, root and
// unroot, reboot with /data kept. Inside: getprop/setprop, a Magisk- or
// KernelSU-style su and module installer, boot-time module scripts, and
// the host's coreutils. App uids are real host uids, so SO_PEERCRED
// identity inside the device is real.
//
// # Shaped like Android where our binaries notice
//
// The lab's binaries are static GOOS=linux executables, and a phone is
// not the Linux they expect. A device is made to fail where a phone fails:
//
//   - No /tmp, no /etc/resolv.conf, no /etc/passwd, no /etc/localtime:
//     /etc is a link to /system/etc, which holds Android's hosts file
//     (localhost, ip6-localhost) and build.prop. The host's /usr, /bin
//     and libraries are visible read-only and nosuid for its shell and
//     coreutils, but the host's zoneinfo folders (and the Go root's
//     lib/time) are hidden under empty read-only mounts.
//   - The zone is the property persist.sys.timezone, set at every boot
//     from Options.TimeZone (default Asia/Shanghai: not UTC, so a binary
//     that ignores the device's zone is caught); the zones are in
//     Android's packed tzdata format where Android keeps them
//     (/apex/com.android.tzdata/etc/tz/tzdata from API 29,
//     /system/usr/share/zoneinfo/tzdata before), built at start from the
//     host's zoneinfo.
//   - Names resolve only through netd's DNS proxy, /dev/socket/dnsproxyd
//     (mode 0660, root:inet): a stand-in speaking netd's protocol
//     (getaddrinfo, gethostbyname) answers from the lab's table
//     (Options.Hosts, SetHosts; the lab publishes its model stub as
//     model.agentlab.test) and then from the host's resolver. Its server
//     runs on the host side, in the process that owns the device; the
//     device's network namespace has only loopback, so no other DNS is
//     reachable from inside. Go's own resolver there asks [::1]:53 and gets
//     "connection refused", as on a phone.
//   - The inet group (3003) is enforced: an AF_INET or AF_INET6 socket is
//     refused (EACCES) to a process whose effective uid is not 0 and whose
//     groups hold neither inet nor net_raw, the rule of
//     CONFIG_ANDROID_PARANOID_NETWORK (a seccomp user notification answered
//     by init; ro.vdevice.paranoid_network=1 says it is on, 0 that the host
//     kernel could not install it). adbd's shell user has Android's shell
//     groups, inet among them; su to an app uid gives no groups.
//   - Services started from module scripts get Android's init environment
//     (ANDROID_ROOT, ANDROID_DATA, …) and no HOME worth having; adb's shell
//     has TMPDIR=/data/local/tmp, as on a phone.
//
// # What still differs from a phone
//
//   - There is no Binder, so no pm, am, cmd or dumpsys (and no battery);
//     no SELinux (everything runs as if permissive); no screencap
//     (screenshots are unsupported, and the missing binary says so).
//   - The network is loopback only: the host is reached through adb
//     reverse, and names the host's resolver answers are unreachable
//     addresses inside (no HTTPS to the internet; no CA store under
//     /system/etc/security/cacerts).
//   - netd's stand-in answers getaddrinfo and gethostbyname, not resnsend,
//     gethostbyaddr or getdnsnetid; it ignores AI_ADDRCONFIG and netids,
//     knows no service names (a numeric port only), and never blocks a
//     uid (on a phone netd refuses uids whose network access is blocked).
//   - The inet rule is that of kernels with CONFIG_ANDROID_PARANOID_NETWORK.
//     Android 12+ GKI kernels instead ask netd's BPF map per app uid, which
//     allows uids the package manager does not know (the runtime's and our
//     bundles' uids) — so there a phone lets an undeclared app open
//     sockets that a virtual device refuses. The emulation does not cover
//     32-bit system-call ABIs (socketcall, x32) or io_uring's socket
//     operation.
//   - The tzdata file carries the host's zones and release, not an APEX
//     update's; /system/etc/hosts, build.prop and the zones are rewritten at
//     every start.
//   - The host's coreutils are GNU/BusyBox, not toybox, and find no user
//     names (no /etc/passwd; bionic knows Android's ids built in).
//   - Modules' system/ folders are not overlaid onto /system.
//
// Starting a device needs Linux and root (CAP_SYS_ADMIN). Any binary that
// starts devices must call Init first thing in main (and test binaries in
// TestMain): the same executable serves as the device's init and as the
// tools inside it. Each start puts a hard link (or a copy) of it in the
// device's root, and init and the tools run that, so a device kept running
// (StartDetached) keeps working, and rebooting, after the binary that
// started it is rebuilt or deleted.
package virtual
