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
// What a virtual device is not: there is no Binder, so no pm, am, cmd or
// dumpsys (and no battery); no SELinux; no screencap (screenshots are
// unsupported, and the missing binary says so); no network but loopback;
// modules' system/ folders are not overlaid onto /system. The host's
// /usr, /etc and libraries are visible read-only, nosuid.
//
// Starting a device needs Linux and root (CAP_SYS_ADMIN). Any binary that
// starts devices must call Init first thing in main (and test binaries in
// TestMain): the same executable serves as the device's init and as the
// tools inside it. Each start puts a hard link (or a copy) of it in the
// device's root, and init and the tools run that, so a device kept running
// (StartDetached) keeps working, and rebooting, after the binary that
// started it is rebuilt or deleted.
package virtual
