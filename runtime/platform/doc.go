// Package platform is what the runtime and the apps must do differently
// on Android, where one static GOOS=linux binary meets a system that is
// not the Linux Go expects. Every main of the runtime and of the sample
// apps calls Setup first thing; the HTTP clients and dialers use the
// platform's DialContext and LookupNetIP. On plain Linux Setup changes
// nothing and DialContext is the net.Dialer's own.
//
// On Android (detected by /system/build.prop, or /system/bin/getprop with
// $ANDROID_ROOT set — a virtual device is detected too):
//
//   - Names resolve through netd (/dev/socket/dnsproxyd, package dnsproxyd)
//     after /system/etc/hosts, as bionic does: Android has no
//     /etc/resolv.conf, so Go's resolver would ask [::1]:53 and fail with
//     "connection refused". When netd cannot answer (no socket, no inet
//     group, a failed lookup), the DNS servers of the runtime's setting
//     persist.agentos.fallback_dns (IP[:port], comma-separated; set with
//     `setprop persist.agentos.fallback_dns 1.1.1.1` as root) are asked
//     instead. net.Resolver cannot be pointed at netd (it speaks DNS
//     wire format, netd does not), so DialContext resolves first and
//     dials the address.
//   - The time zone is $TZ when set, else the property persist.sys.timezone
//     (bionic's order), loaded from Android's tzdata (package tzdata) or
//     else from the tzdata embedded in the binary (time/tzdata); time.Local
//     is set to it. Without this a GOOS=linux binary runs in UTC, and an
//     alarm at 07:00 for a user in Asia/Shanghai fires at 15:00.
//   - $TMPDIR, when unset or not writable, becomes <data dir>/tmp (the data
//     dir is Options.DataDir, else $HOME, else /data/local/tmp): Android has
//     no /tmp, and processes started from a module's service.sh get no
//     TMPDIR.
//   - $SSL_CERT_DIR, when unset, names Android's CA stores
//     (/apex/com.android.conscrypt/cacerts, /system/etc/security/cacerts).
//   - Nothing reads /etc/passwd (it does not exist): the platform never asks
//     os/user, and HOME comes from the environment the launcher gives.
//
// Built with the tag agentos_noplatform the layer detects nothing: the
// binaries behave as before it existed (the lab uses that build to show
// the scenarios that fail without it).
package platform
