//go:build linux

package boot

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"golang.org/x/sys/unix"
)

// hostDirs are the host's system folders a device sees read-only, for
// the host's coreutils and shell. /etc is not one: Android's /etc is a
// link to /system/etc, and the host's would give a device processes
// /etc/resolv.conf, /etc/passwd and /etc/localtime that no phone has.
var hostDirs = []string{"usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32"}

// devNodes are the host device nodes bound into the device's /dev.
var devNodes = []string{"null", "zero", "full", "random", "urandom", "tty"}

// setupRoot composes the device's root and pivots into it. It runs in
// the device's fresh mount namespace, so nothing here is seen by the host.
func setupRoot(cfg *Config) error {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make mounts private: %w", err)
	}
	newRoot := filepath.Join(cfg.HostRoot, ".rootfs")
	if err := os.MkdirAll(newRoot, 0o755); err != nil {
		return err
	}
	if err := unix.Mount("tmpfs", newRoot, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0755,size=16m"); err != nil {
		return fmt.Errorf("mount root tmpfs: %w", err)
	}
	at := func(p string) string { return filepath.Join(newRoot, p) }
	for _, d := range hostDirs {
		host := "/" + d
		fi, err := os.Lstat(host)
		if err != nil {
			continue
		}
		if fi.Mode()&os.ModeSymlink != 0 {
			target, err := os.Readlink(host)
			if err != nil {
				return err
			}
			if err := os.Symlink(target, at(d)); err != nil {
				return err
			}
			continue
		}
		if !fi.IsDir() {
			continue
		}
		if err := bind(host, at(d), true, true); err != nil {
			return err
		}
	}
	for _, h := range cfg.Hide {
		// An empty read-only folder over the host's: a phone has none.
		if fi, err := os.Stat(at(h)); err != nil || !fi.IsDir() {
			continue
		}
		if err := unix.Mount("tmpfs", at(h), "tmpfs", unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "mode=0755,size=4k"); err != nil {
			return fmt.Errorf("hide %s: %w", h, err)
		}
	}
	if err := os.Symlink("/system/etc", at("etc")); err != nil {
		return err
	}
	for _, d := range []string{"data", "system", "sdcard"} {
		if err := bind(filepath.Join(cfg.HostRoot, d), at(d), false, true); err != nil {
			return err
		}
	}
	if _, err := os.Stat(filepath.Join(cfg.HostRoot, "apex")); err == nil {
		if err := bind(filepath.Join(cfg.HostRoot, "apex"), at(APEXDir), true, true); err != nil {
			return err
		}
	}
	// The multi-call binary is the device's own copy in its persistent
	// /system (see ToolPath), made read-only for the device's root.
	tool := at(ToolPath)
	if fi, err := os.Stat(tool); err != nil || !fi.Mode().IsRegular() || fi.Size() == 0 {
		return fmt.Errorf("device tool %s missing or empty (it is made when the device starts)", ToolPath)
	}
	if err := bind(tool, tool, true, false); err != nil {
		return err
	}
	if err := mkMount("proc", at("proc"), "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return err
	}
	if err := mkMount("tmpfs", at("dev"), "tmpfs", unix.MS_NOSUID, "mode=0755,size=1m"); err != nil {
		return err
	}
	for _, n := range devNodes {
		if err := os.WriteFile(at("dev/"+n), nil, 0o644); err != nil {
			return err
		}
		if err := unix.Mount("/dev/"+n, at("dev/"+n), "", unix.MS_BIND, ""); err != nil {
			return fmt.Errorf("bind /dev/%s: %w", n, err)
		}
	}
	for _, l := range [][2]string{{"/proc/self/fd", "fd"}, {"/proc/self/fd/0", "stdin"}, {"/proc/self/fd/1", "stdout"}, {"/proc/self/fd/2", "stderr"}} {
		if err := os.Symlink(l[0], at("dev/"+l[1])); err != nil {
			return err
		}
	}
	if err := os.Mkdir(at("dev/socket"), 0o755); err != nil {
		return err
	}
	if cfg.Netd != "" {
		// The socket lives on the host side, where its server can reach
		// the host's resolver; the device sees it where netd puts it.
		if err := os.WriteFile(at(DnsproxydPath), nil, 0o600); err != nil {
			return err
		}
		if err := unix.Mount(cfg.Netd, at(DnsproxydPath), "", unix.MS_BIND, ""); err != nil {
			return fmt.Errorf("bind %s: %w", DnsproxydPath, err)
		}
	}
	if err := os.Mkdir(at("dev/tmp"), 0o700); err != nil {
		return err
	}
	// A private devpts instance: ptys of interactive adb shells.
	if err := mkMount("devpts", at("dev/pts"), "devpts", unix.MS_NOSUID|unix.MS_NOEXEC, "newinstance,ptmxmode=0666,mode=0620"); err != nil {
		return err
	}
	if err := os.Symlink("pts/ptmx", at("dev/ptmx")); err != nil {
		return err
	}
	if err := mkMount("tmpfs", at("dev/shm"), "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=1777,size=16m"); err != nil {
		return err
	}
	// sysfs is a nicety (a few tools read it); a device works without it.
	mkMount("sysfs", at("sys"), "sysfs", unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "")

	old := at(".old")
	if err := os.Mkdir(old, 0o700); err != nil {
		return err
	}
	if err := unix.PivotRoot(newRoot, old); err != nil {
		return fmt.Errorf("pivot_root: %w", err)
	}
	if err := os.Chdir("/"); err != nil {
		return err
	}
	if err := unix.Unmount("/.old", unix.MNT_DETACH); err != nil {
		return fmt.Errorf("detach old root: %w", err)
	}
	return os.Remove("/.old")
}

// bind bind-mounts src on dst (created as a folder when dir), read-only
// when ro.
func bind(src, dst string, ro, dir bool) error {
	if dir {
		if err := os.MkdirAll(dst, 0o755); err != nil {
			return err
		}
	}
	if err := unix.Mount(src, dst, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("bind %s: %w", src, err)
	}
	if ro {
		// nosuid: the host's setuid binaries (su, sudo) must not give
		// device users root.
		if err := unix.Mount("", dst, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV, ""); err != nil {
			return fmt.Errorf("read-only %s: %w", src, err)
		}
	}
	return nil
}

func mkMount(src, dst, fstype string, flags uintptr, data string) error {
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	if err := unix.Mount(src, dst, fstype, flags, data); err != nil {
		return fmt.Errorf("mount %s on %s: %w", fstype, filepath.Base(dst), err)
	}
	return nil
}

// loUp brings the loopback interface of the device's new net namespace up.
func loUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("lo up: %w", err)
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return fmt.Errorf("lo up: %w", err)
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return fmt.Errorf("lo up: %w", err)
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		return fmt.Errorf("lo up: %w", err)
	}
	return nil
}

// layout creates the device's Android folders with Android's owners and
// modes, every boot (a reset or an older layout may lack them).
func layout() error {
	dirs := []struct {
		path     string
		mode     os.FileMode
		uid, gid int
	}{
		{"/data", 0o771, 0, 0},
		{"/data/local", 0o751, 0, 0},
		{"/data/local/tmp", 0o771, 2000, 2000},
		{"/data/adb", 0o700, 0, 0},
		{"/data/property", 0o700, 0, 0},
		{"/data/data", 0o771, 0, 0},
		{"/data/app", 0o771, 0, 0},
		{"/sdcard", 0o777, 0, 0},
		{"/system", 0o755, 0, 0},
		{"/system/bin", 0o755, 0, 0},
		{"/system/etc", 0o755, 0, 0},
	}
	var errs []error
	for _, d := range dirs {
		if err := os.MkdirAll(d.path, d.mode); err != nil {
			errs = append(errs, err)
			continue
		}
		errs = append(errs, os.Chmod(d.path, d.mode), os.Lchown(d.path, d.uid, d.gid))
	}
	return errors.Join(errs...)
}

// hostsFile is Android's /system/etc/hosts.
const hostsFile = "127.0.0.1       localhost\n::1             ip6-localhost\n"

// androidFiles writes, every boot, the files an Android image has and
// our binaries read: /system/etc/hosts (bionic's hosts file, /etc being a
// link to /system/etc) and /system/build.prop (the ro.* properties).
func androidFiles(cfg *Config) error {
	var b strings.Builder
	b.WriteString("# begin build properties (a virtual device's)\n")
	names := make([]string, 0, len(cfg.Props))
	for k := range cfg.Props {
		if strings.HasPrefix(k, "ro.") {
			names = append(names, k)
		}
	}
	sort.Strings(names)
	for _, k := range names {
		b.WriteString(k + "=" + cfg.Props[k] + "\n")
	}
	return errors.Join(
		os.WriteFile("/system/etc/hosts", []byte(hostsFile), 0o644),
		os.WriteFile("/system/build.prop", []byte(b.String()), 0o644),
	)
}
