package apptool

import (
	"errors"
	"fmt"
	"os"
)

// SharedDir makes sure dir exists for the simulated system services that
// every app of a device shares (the alarm clock, the calendar provider).
// Apps run under their own uids, so a directory this call creates is
// writable by every uid, without the sticky bit: apps replace files
// another uid created (atomic renames, SQLite's -wal and -shm clean-up).
// A directory the launcher created is left as it is.
func SharedDir(dir string) error {
	if _, err := os.Stat(dir); err == nil {
		return nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("shared dir: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("shared dir: %w", err)
	}
	if err := os.Chmod(dir, 0o777); err != nil {
		return fmt.Errorf("shared dir: %w", err)
	}
	return nil
}

// ShareFiles opens files in a shared directory to every app uid (mode
// 0666). Files owned by another uid are skipped: only their owner may
// change them, and whoever created them already shared them.
func ShareFiles(paths ...string) {
	for _, p := range paths {
		_ = os.Chmod(p, 0o666)
	}
}
