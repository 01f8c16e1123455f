// Package modules installs and boots Magisk and KernelSU modules on a
// virtual device: "magisk --install-module" and "ksud module install"
// stage a module zip into /data/adb/modules_update/<id>; the next boot
// moves it into /data/adb/modules/<id>, honours the disable and remove
// flags, loads system.prop, runs post-fs-data.sh (blocking, with the root
// solution's timeout) and starts service.sh (not waited for).
package modules
