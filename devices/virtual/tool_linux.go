//go:build linux

package virtual

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/agentoslab/agentlab/devices/virtual/internal/boot"
)

// selfExe names the running binary even after its file is deleted or
// replaced.
const selfExe = "/proc/self/exe"

// toolFile is the host path of the device's own copy of the executable:
// every boot's init and every in-device tool (getprop, su, magisk, …) run
// it, so a kept device keeps working after the binary that started it is
// rebuilt or deleted.
func toolFile(root string) string { return filepath.Join(root, filepath.FromSlash(boot.ToolPath)) }

// installTool puts the running binary (self) at dst. A hard link of exe,
// the path the binary was started from, costs nothing, so it is tried
// first; it is used only if exe still is the running binary (a rebuild may
// have replaced it) and anyone may run it (the shell uid runs the tools:
// a link shares the original's mode, which must not be changed). Otherwise
// self is copied. dst is replaced atomically, and left alone when it
// already is the running binary or a copy of it.
func installTool(dst, exe, self string) error {
	selfInfo, err := os.Stat(self)
	if err != nil {
		return fmt.Errorf("install device tool: %w", err)
	}
	if fi, err := os.Stat(dst); err == nil && worldExecutable(fi) &&
		(os.SameFile(fi, selfInfo) || fi.Size() == selfInfo.Size() && sameContent(dst, self)) {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return fmt.Errorf("install device tool: %w", err)
	}
	tmp := dst + ".new"
	os.Remove(tmp)
	if exe != "" && worldExecutable(selfInfo) {
		if err := os.Link(exe, tmp); err == nil {
			if fi, err := os.Stat(tmp); err == nil && os.SameFile(fi, selfInfo) {
				return replace(tmp, dst)
			}
			os.Remove(tmp)
		}
	}
	if err := copyExe(self, tmp); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("install device tool: %w", err)
	}
	return replace(tmp, dst)
}

func worldExecutable(fi os.FileInfo) bool {
	return fi.Mode().IsRegular() && fi.Mode().Perm()&0o005 == 0o005
}

func replace(tmp, dst string) error {
	if err := os.Rename(tmp, dst); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("install device tool: %w", err)
	}
	return nil
}

// copyExe copies src to a new file dst, mode 0755, synced.
func copyExe(src, dst string) (err error) {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := out.Close(); err == nil {
			err = cerr
		}
	}()
	if _, err := io.Copy(out, in); err != nil {
		return err
	}
	// The umask may have narrowed the mode given to OpenFile.
	return errors.Join(out.Chmod(0o755), out.Sync())
}

// sameContent reports whether files a and b hold the same bytes.
func sameContent(a, b string) bool {
	fa, err := os.Open(a)
	if err != nil {
		return false
	}
	defer fa.Close()
	fb, err := os.Open(b)
	if err != nil {
		return false
	}
	defer fb.Close()
	ba, bb := make([]byte, 1<<16), make([]byte, 1<<16)
	for {
		na, errA := io.ReadFull(fa, ba)
		nb, errB := io.ReadFull(fb, bb)
		if na != nb || !bytes.Equal(ba[:na], bb[:nb]) {
			return false
		}
		if errA != nil || errB != nil {
			// Both ended here, or one failed to read.
			return ended(errA) && ended(errB)
		}
	}
}

func ended(err error) bool { return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) }
