package adb

import (
	"context"
	"io/fs"
	"os"
)

// pushFile pushes a host file.
func pushFile(ctx context.Context, d *Device, local, remote string, mode fs.FileMode) error {
	f, err := os.Open(local)
	if err != nil {
		return err
	}
	defer f.Close()
	return d.Push(ctx, f, remote, mode)
}
