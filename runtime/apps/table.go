package apps

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Package is one installed app as the package table records it.
type Package struct {
	// Name is the package name (app.json "package").
	Name string `json:"package"`
	// UID is the app's uid; packages with one sharedUserId share it.
	UID int `json:"uid"`
	// SigningDigest identifies the signer (SigningDigest of its key).
	SigningDigest string `json:"signingDigest"`
	VersionCode   int64  `json:"versionCode"`
	VersionName   string `json:"versionName,omitempty"`
	Label         string `json:"label"`
	// Services are the app's MCP servers (app.json "services").
	Services     []Service `json:"services"`
	Caller       bool      `json:"caller"`
	SharedUserID string    `json:"sharedUserId,omitempty"`
	Binary       string    `json:"binary"`
	Commands     []string  `json:"commands,omitempty"`
	// Permissions are app.json's (PermissionNetwork).
	Permissions []string `json:"permissions,omitempty"`
	// ABI is the ABI whose binary was installed.
	ABI string `json:"abi"`
	// CodeDir holds the unpacked bundle (root-owned, readable by all).
	CodeDir string `json:"codeDir"`
	// DataDir is the app's private directory (owned by UID, mode 0700).
	DataDir string `json:"dataDir"`
	// ContentDigest identifies the bundle's files (Manifest.ContentDigest).
	ContentDigest string `json:"contentDigest"`
	// InstalledAt and UpdatedAt are unix milliseconds.
	InstalledAt int64 `json:"installedAt"`
	UpdatedAt   int64 `json:"updatedAt"`
	// PreviousSigningDigest and SignatureChangedAt record the last
	// upgrade that changed the signer (the caller registry and the
	// extension host ask the owner again).
	PreviousSigningDigest string `json:"previousSigningDigest,omitempty"`
	SignatureChangedAt    int64  `json:"signatureChangedAt,omitempty"`
}

// BinaryPath is the installed executable.
func (p *Package) BinaryPath() string {
	return filepath.Join(p.CodeDir, "bin", p.ABI, p.Binary)
}

// PluginDir is the installed Agent Plugin directory (it may not exist).
func (p *Package) PluginDir() string { return filepath.Join(p.CodeDir, filepath.FromSlash(PluginDir)) }

// Service returns the service whose Server is server.
func (p *Package) Service(server string) (Service, bool) {
	for _, s := range p.Services {
		if s.Server == server {
			return s, true
		}
	}
	return Service{}, false
}

// HasCommand reports whether name is one of the app's debug commands.
func (p *Package) HasCommand(name string) bool { return slices.Contains(p.Commands, name) }

// UsesNetwork reports whether the package declares network use.
func (p *Package) UsesNetwork() bool { return slices.Contains(p.Permissions, PermissionNetwork) }

// HasPermission reports whether the package declares perm.
func (p *Package) HasPermission(perm string) bool { return slices.Contains(p.Permissions, perm) }

func (p Package) clone() Package {
	p.Services = slices.Clone(p.Services)
	p.Commands = slices.Clone(p.Commands)
	p.Permissions = slices.Clone(p.Permissions)
	return p
}

// EventKind says what happened to a package.
type EventKind string

const (
	Installed        EventKind = "Installed"
	Updated          EventKind = "Updated"
	SignatureChanged EventKind = "SignatureChanged"
	Removed          EventKind = "Removed"
)

// Event is one change of the package table. Seq is the table version
// the change produced.
type Event struct {
	Seq                   uint64    `json:"seq"`
	Kind                  EventKind `json:"kind"`
	Package               string    `json:"package"`
	UID                   int       `json:"uid"`
	VersionCode           int64     `json:"versionCode"`
	PreviousVersionCode   int64     `json:"previousVersionCode,omitempty"`
	SigningDigest         string    `json:"signingDigest"`
	PreviousSigningDigest string    `json:"previousSigningDigest,omitempty"`
	At                    int64     `json:"at"`
}

// Table file names inside the apps directory.
const (
	tableName   = "packages.json"
	backupName  = "packages.json.bak"
	corruptName = "packages.json.corrupt"
	lockName    = "packages.lock"
	tableFormat = 1
	// maxEvents is how many past changes the table keeps for readers
	// that were away.
	maxEvents      = 64
	maxTableBytes  = 16 << 20
	sharedUIDKeyPf = "shared:"
)

// ErrTableCorrupt means the package table and its backup are both
// unreadable. Nothing is installed or removed until an operator repairs
// it; it is never treated as empty (that would forget every app's uid
// and signer).
var ErrTableCorrupt = errors.New("package table unreadable")

// tableFile is packages.json.
type tableFile struct {
	Format  int    `json:"format"`
	Version uint64 `json:"version"`
	// UIDs maps a package (or "shared:<sharedUserId>") to its uid, kept
	// after uninstall so a uid never passes to another package.
	UIDs     map[string]int `json:"uids"`
	Packages []Package      `json:"packages"`
	Events   []Event        `json:"events"`
}

func emptyTable() *tableFile { return &tableFile{Format: tableFormat, UIDs: map[string]int{}} }

func parseTable(b []byte) (*tableFile, error) {
	var tf tableFile
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&tf); err != nil {
		return nil, fmt.Errorf("parse: %w", err)
	}
	if dec.More() {
		return nil, errors.New("parse: trailing data")
	}
	if tf.Format != tableFormat {
		return nil, fmt.Errorf("parse: format %d, want %d", tf.Format, tableFormat)
	}
	if tf.UIDs == nil {
		tf.UIDs = map[string]int{}
	}
	seen := map[string]bool{}
	for _, p := range tf.Packages {
		if !ValidPackage(p.Name) || seen[p.Name] || p.UID <= 0 || len(p.SigningDigest) != 64 || p.CodeDir == "" || p.DataDir == "" {
			return nil, fmt.Errorf("parse: bad package record %q", clipText(p.Name))
		}
		seen[p.Name] = true
	}
	return &tf, nil
}

// readTableFile reads one table file; a missing file is (nil, nil).
func readTableFile(path string) (*tableFile, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxTableBytes+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxTableBytes {
		return nil, fmt.Errorf("parse: over %d bytes", maxTableBytes)
	}
	return parseTable(b)
}

// loadTable reads packages.json, falling back to the backup when the main
// file is unreadable. fellBack reports that the backup was used. Both
// missing is a fresh, empty table; both unreadable is ErrTableCorrupt.
func loadTable(dir string) (tf *tableFile, fellBack bool, err error) {
	main, mainErr := readTableFile(filepath.Join(dir, tableName))
	if mainErr == nil && main != nil {
		return main, false, nil
	}
	bak, bakErr := readTableFile(filepath.Join(dir, backupName))
	switch {
	case bakErr == nil && bak != nil:
		return bak, true, nil
	case mainErr == nil && bakErr == nil:
		return emptyTable(), false, nil
	}
	why := mainErr
	if why == nil {
		why = bakErr
	}
	return nil, false, fmt.Errorf("%w: %s and %s: %v (move both aside to start with an empty table; every app would need reinstalling)",
		ErrTableCorrupt, filepath.Join(dir, tableName), backupName, why)
}

// writeTable replaces packages.json atomically: the new content goes to
// a temporary file that is synced and renamed over the table, after the
// current table was hard-linked as the backup. The table is never
// missing, and a crash leaves either the old or the new version.
func writeTable(dir string, tf *tableFile) error {
	b, err := json.MarshalIndent(tf, "", " ")
	if err != nil {
		return fmt.Errorf("write package table: %w", err)
	}
	b = append(b, '\n')
	tmp := filepath.Join(dir, tableName+".tmp")
	if err := writeFileSync(tmp, b, 0o644); err != nil {
		return fmt.Errorf("write package table: %w", err)
	}
	main := filepath.Join(dir, tableName)
	if cur, err := readTableFile(main); err == nil && cur != nil {
		bakTmp := filepath.Join(dir, backupName+".tmp")
		os.Remove(bakTmp)
		if err := os.Link(main, bakTmp); err != nil {
			// No hard links here: copy instead.
			raw, rerr := os.ReadFile(main)
			if rerr != nil {
				return fmt.Errorf("write package table: backup: %w", rerr)
			}
			if err := writeFileSync(bakTmp, raw, 0o644); err != nil {
				return fmt.Errorf("write package table: backup: %w", err)
			}
		}
		if err := os.Rename(bakTmp, filepath.Join(dir, backupName)); err != nil {
			return fmt.Errorf("write package table: backup: %w", err)
		}
	}
	if err := os.Rename(tmp, main); err != nil {
		return fmt.Errorf("write package table: %w", err)
	}
	return syncDir(dir)
}

func writeFileSync(path string, b []byte, mode os.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|syscall.O_NOFOLLOW, mode)
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Chmod(mode); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// TableOptions configure a Table. The zero value works.
type TableOptions struct {
	// PollInterval is how often the table file is checked for changes;
	// 0 means 2 s, negative disables polling (call Reload).
	PollInterval time.Duration
	// Logger receives load problems; nil discards.
	Logger *slog.Logger
}

// Table is the read-only view of the package table that the runtime and
// the extension host use (they run as their own uid and cannot write
// it). It reloads when the file changes. Safe for concurrent use.
type Table struct {
	dir    string
	logger *slog.Logger

	mu      sync.RWMutex
	tf      *tableFile    // guarded by mu
	stamp   fileStamp     // guarded by mu
	changed chan struct{} // guarded by mu; closed and replaced on change

	cancel context.CancelFunc
	done   chan struct{}
}

type fileStamp struct {
	ino   uint64
	size  int64
	mtime int64
}

func stampOf(path string) fileStamp {
	fi, err := os.Stat(path)
	if err != nil {
		return fileStamp{}
	}
	st, _ := fi.Sys().(*syscall.Stat_t)
	var ino uint64
	if st != nil {
		ino = st.Ino
	}
	return fileStamp{ino: ino, size: fi.Size(), mtime: fi.ModTime().UnixNano()}
}

// OpenTable opens the package table in dir (the installer's apps
// directory). A missing table is empty; an unreadable table with a
// readable backup uses the backup; both unreadable is ErrTableCorrupt.
func OpenTable(dir string, opts *TableOptions) (*Table, error) {
	var o TableOptions
	if opts != nil {
		o = *opts
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.PollInterval == 0 {
		o.PollInterval = 2 * time.Second
	}
	t := &Table{dir: dir, logger: o.Logger, changed: make(chan struct{}), done: make(chan struct{})}
	if err := t.Reload(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.cancel = cancel
	if o.PollInterval < 0 {
		close(t.done)
		return t, nil
	}
	go func() {
		defer close(t.done)
		tick := time.NewTicker(o.PollInterval)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				t.mu.RLock()
				old := t.stamp
				t.mu.RUnlock()
				if stampOf(filepath.Join(t.dir, tableName)) != old {
					if err := t.Reload(); err != nil {
						t.logger.Warn("apps: package table reload failed; keeping the last good copy", "err", err)
					}
				}
			}
		}
	}()
	return t, nil
}

// Close stops watching the file.
func (t *Table) Close() error {
	t.cancel()
	<-t.done
	return nil
}

// Reload reads the table now. On error the last good copy stays.
func (t *Table) Reload() error {
	stamp := stampOf(filepath.Join(t.dir, tableName))
	tf, fellBack, err := loadTable(t.dir)
	if err != nil {
		return err
	}
	if fellBack {
		t.logger.Warn("apps: package table unreadable, using its backup", "dir", t.dir)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.tf != nil && t.tf.Version == tf.Version && !fellBack {
		t.stamp = stamp
		return nil
	}
	t.tf, t.stamp = tf, stamp
	close(t.changed)
	t.changed = make(chan struct{})
	return nil
}

// Version is the table's version: it grows with every change.
func (t *Table) Version() uint64 {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.tf.Version
}

// Changed returns a channel closed at the next change of the table.
func (t *Table) Changed() <-chan struct{} {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.changed
}

// All returns every installed package sorted by name.
func (t *Table) All() []Package {
	t.mu.RLock()
	defer t.mu.RUnlock()
	out := make([]Package, 0, len(t.tf.Packages))
	for _, p := range t.tf.Packages {
		out = append(out, p.clone())
	}
	slices.SortFunc(out, func(a, b Package) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// ByName returns the package called name.
func (t *Table) ByName(name string) (Package, bool) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	for _, p := range t.tf.Packages {
		if p.Name == name {
			return p.clone(), true
		}
	}
	return Package{}, false
}

// ByUID returns the packages running as uid, sorted by name: none for an
// unknown uid, several for a shared uid.
func (t *Table) ByUID(uid int) []Package {
	t.mu.RLock()
	defer t.mu.RUnlock()
	var out []Package
	for _, p := range t.tf.Packages {
		if p.UID == uid {
			out = append(out, p.clone())
		}
	}
	slices.SortFunc(out, func(a, b Package) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// Events returns the changes after version since, oldest first.
// complete is false when older changes than the table keeps were missed:
// the reader must then compare its own memory with All.
func (t *Table) Events(since uint64) (evs []Event, complete bool) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	switch {
	case since == t.tf.Version:
		return nil, true
	case since > t.tf.Version:
		// The table went back (restored from its backup).
		return nil, false
	}
	complete = true
	for _, e := range t.tf.Events {
		if e.Seq > since {
			evs = append(evs, e)
		}
	}
	if len(evs) == 0 || evs[0].Seq > since+1 {
		complete = false
	}
	return evs, complete
}
