// Package durable keeps a small JSON file with a backup copy, written
// atomically (temporary file, fsync, rename, directory fsync), and reads
// it back with the rule the extension host needs: an unreadable file is
// never taken for an empty one. The caller learns which copy it got.
package durable

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// Source says which copy Load read.
type Source string

const (
	// FromFile: the main file.
	FromFile Source = "file"
	// FromBackup: the main file was unreadable (kept as <name>.corrupt)
	// and the backup was used.
	FromBackup Source = "backup"
	// None: neither copy exists (a first start).
	None Source = "new"
	// Unreadable: a copy exists but neither parses; the caller must fail
	// closed.
	Unreadable Source = "unreadable"
)

// MaxBytes bounds a file read.
const MaxBytes = 8 << 20

// File is a JSON file at Path with a backup at Backup.
type File struct {
	Path   string
	Backup string
}

// Load reads the main file, else the backup, with parse (which must
// reject anything that is not a valid document). A copy that exists but
// does not parse is renamed to <path>.corrupt so it can be inspected.
func (f File) Load(parse func([]byte) error) (Source, error) {
	mainData, mainErr := read(f.Path)
	if mainErr == nil {
		if err := parse(mainData); err == nil {
			return FromFile, nil
		}
	}
	backData, backErr := read(f.Backup)
	if backErr == nil {
		if err := parse(backData); err == nil {
			if mainErr == nil || !errors.Is(mainErr, os.ErrNotExist) {
				os.Rename(f.Path, f.Path+".corrupt")
			}
			return FromBackup, nil
		}
	}
	if errors.Is(mainErr, os.ErrNotExist) && errors.Is(backErr, os.ErrNotExist) {
		return None, nil
	}
	return Unreadable, fmt.Errorf("durable: %s and its backup are unreadable", filepath.Base(f.Path))
}

func read(path string) ([]byte, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	b, err := io.ReadAll(io.LimitReader(fh, MaxBytes+1))
	if err != nil {
		return nil, err
	}
	if len(b) > MaxBytes {
		return nil, fmt.Errorf("durable: %s is over %d bytes", filepath.Base(path), MaxBytes)
	}
	return b, nil
}

// Save writes data to the main file and then to the backup, each
// atomically, so at any moment at least one holds a complete document.
func (f File) Save(data []byte) error {
	if err := writeAtomic(f.Path, data); err != nil {
		return err
	}
	return writeAtomic(f.Backup, data)
}

func writeAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("durable: %w", err)
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("durable: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("durable: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("durable: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("durable: %w", err)
	}
	if err := os.Chmod(tmp.Name(), 0o600); err != nil {
		return fmt.Errorf("durable: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("durable: %w", err)
	}
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}
