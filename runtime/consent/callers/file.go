package callers

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
)

// File names under the registry's directory (<data>/acp).
const (
	FileName    = "callers.json"
	backupName  = "callers.json.bak"
	corruptName = "callers.json.corrupt"
	fileVersion = 1
	// maxFileBytes bounds what is read: 64 entries of a few hundred bytes.
	maxFileBytes = 1 << 20
)

// Record is one persisted entry (ALLOWED or DENIED). Times are Unix ms.
type Record struct {
	PackageName      string `json:"packageName"`
	Label            string `json:"label"`
	SigningDigest    string `json:"signingDigest"`
	State            State  `json:"state"`
	FirstSeenAt      int64  `json:"firstSeenAt"`
	DecidedAt        int64  `json:"decidedAt"`
	LastUsedAt       int64  `json:"lastUsedAt,omitempty"`
	DeniedUntil      int64  `json:"deniedUntil,omitempty"`
	SignatureChanged bool   `json:"signatureChanged,omitempty"`
	// UIDs are the uids the package was seen with at admission; revocation
	// cancels the tasks of each.
	UIDs []int `json:"uids,omitempty"`
}

type fileForm struct {
	Version int      `json:"version"`
	Callers []Record `json:"callers"`
}

var (
	digestRE  = regexp.MustCompile(`^[0-9a-f]{64}$`)
	packageRE = regexp.MustCompile(`^[A-Za-z0-9_]+(\.[A-Za-z0-9_]+)*$`)
)

// ErrCorrupt means a registry file could not be used.
var ErrCorrupt = errors.New("callers: registry file is corrupt")

// ParseFile reads the content of callers.json strictly: unknown fields,
// a wrong version, a bad package name or digest, a state other than
// allowed/denied, duplicate packages or more than maxEntries records make
// the whole file corrupt (fail closed: the owner is asked again rather
// than trusting a damaged grant).
func ParseFile(data []byte, maxEntries int) ([]Record, error) {
	if len(data) > maxFileBytes {
		return nil, fmt.Errorf("%w: over %d bytes", ErrCorrupt, maxFileBytes)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var f fileForm
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("%w: trailing data", ErrCorrupt)
	}
	if f.Version != fileVersion {
		return nil, fmt.Errorf("%w: version %d", ErrCorrupt, f.Version)
	}
	if len(f.Callers) > maxEntries {
		return nil, fmt.Errorf("%w: %d entries, limit %d", ErrCorrupt, len(f.Callers), maxEntries)
	}
	seen := map[string]bool{}
	for i, r := range f.Callers {
		switch {
		case len(r.PackageName) > 255 || !packageRE.MatchString(r.PackageName):
			return nil, fmt.Errorf("%w: callers[%d]: bad packageName", ErrCorrupt, i)
		case !digestRE.MatchString(r.SigningDigest):
			return nil, fmt.Errorf("%w: callers[%d]: bad signingDigest", ErrCorrupt, i)
		case r.State != StateAllowed && r.State != StateDenied:
			return nil, fmt.Errorf("%w: callers[%d]: bad state", ErrCorrupt, i)
		case seen[r.PackageName]:
			return nil, fmt.Errorf("%w: callers[%d]: duplicate package", ErrCorrupt, i)
		case len(r.UIDs) > maxUIDs || len(r.Label) > 4*maxLabelChars:
			return nil, fmt.Errorf("%w: callers[%d]: oversized", ErrCorrupt, i)
		}
		seen[r.PackageName] = true
	}
	return f.Callers, nil
}

// encodeFile is the inverse of ParseFile.
func encodeFile(recs []Record) []byte {
	if recs == nil {
		recs = []Record{}
	}
	b, err := json.MarshalIndent(fileForm{Version: fileVersion, Callers: recs}, "", "  ")
	if err != nil {
		panic("callers: encode: " + err.Error()) // plain structs always encode
	}
	return append(b, '\n')
}

// loadFile reads the registry from dir. A corrupt main file is kept as
// callers.json.corrupt and the backup is tried; with no usable file the
// table is empty. The returned note says what happened, for the log.
func loadFile(dir string, maxEntries int) (recs []Record, note string, err error) {
	main := filepath.Join(dir, FileName)
	data, err := os.ReadFile(main)
	switch {
	case err == nil:
		recs, perr := ParseFile(data, maxEntries)
		if perr == nil {
			return recs, "", nil
		}
		if err := os.Rename(main, filepath.Join(dir, corruptName)); err != nil {
			return nil, "", fmt.Errorf("callers: keep corrupt file: %w", err)
		}
		note = "registry file corrupt, kept as " + corruptName
	case errors.Is(err, fs.ErrNotExist):
	default:
		note = "registry file unreadable"
	}
	data, err = os.ReadFile(filepath.Join(dir, backupName))
	if err != nil {
		if note != "" {
			note += "; no backup, starting empty"
		}
		return nil, note, nil
	}
	recs, perr := ParseFile(data, maxEntries)
	if perr != nil {
		if note == "" {
			note = "backup corrupt"
		}
		return nil, note + "; backup unusable, starting empty", nil
	}
	if note == "" {
		note = "registry file missing"
	}
	return recs, note + "; restored from backup", nil
}

// writeFile replaces the registry atomically: the new content goes to a
// temp file that is synced, the current file (if it parses) is
// hard-linked as the backup, and the temp file is renamed over
// callers.json; one directory sync makes both renames durable. The
// backup is the old file's own inode, already synced when it was
// written, so it costs no data write (this runs on every owner
// decision, and each sync is milliseconds on a busy disk).
func writeFile(dir string, recs []Record) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("callers: save: %w", err)
	}
	main := filepath.Join(dir, FileName)
	tmp, err := writeTemp(main, encodeFile(recs))
	if err != nil {
		return err
	}
	defer os.Remove(tmp)
	if cur, err := os.ReadFile(main); err == nil {
		if _, perr := ParseFile(cur, 1<<30); perr == nil {
			if err := linkBackup(main, filepath.Join(dir, backupName), cur); err != nil {
				return err
			}
		}
	}
	if err := os.Rename(tmp, main); err != nil {
		return fmt.Errorf("callers: save: %w", err)
	}
	return syncDir(dir)
}

// linkBackup makes bak the current main file: a hard link renamed into
// place, or a synced copy of cur where links are not supported.
func linkBackup(main, bak string, cur []byte) error {
	linkTmp := bak + ".link.tmp"
	os.Remove(linkTmp)
	if err := os.Link(main, linkTmp); err != nil {
		tmp, err := writeTemp(bak, cur)
		if err != nil {
			return err
		}
		linkTmp = tmp
	}
	defer os.Remove(linkTmp)
	if err := os.Rename(linkTmp, bak); err != nil {
		return fmt.Errorf("callers: save: backup: %w", err)
	}
	return nil
}

// writeTemp writes data to a synced temporary file next to path and
// returns its name.
func writeTemp(path string, data []byte) (string, error) {
	f, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".*.tmp")
	if err != nil {
		return "", fmt.Errorf("callers: save: %w", err)
	}
	tmp := f.Name()
	err = f.Chmod(0o600)
	if err == nil {
		_, err = f.Write(data)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(tmp)
		return "", fmt.Errorf("callers: save: %w", err)
	}
	return tmp, nil
}

// syncDir makes the renames in dir durable. Best effort, as before:
// some filesystems refuse to sync a directory, and the file data is
// already synced.
func syncDir(dir string) error {
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}
