// Package tzdata writes a virtual device's time-zone database in
// Android's own format — the packed file bionic reads at
// /apex/com.android.tzdata/etc/tz/tzdata (see runtime/platform/tzdata
// for the layout) — from the host's zoneinfo. A device then holds its
// zones where a phone does, and nowhere else: the host's
// /usr/share/zoneinfo is hidden from it.
package tzdata

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// HostZoneinfo is where the host keeps its zones.
const HostZoneinfo = "/usr/share/zoneinfo"

const (
	nameLen   = 40
	entrySize = 52
)

// Build packs zones (IANA name → TZif bytes) into a bionic tzdata file of
// the given release ("2025b"), zones sorted by name as bionic's index
// is, zoneTab appended as the final section.
func Build(version string, zones map[string][]byte, zoneTab []byte) ([]byte, error) {
	if len(version) == 0 || len(version) > 5 {
		return nil, fmt.Errorf("tzdata: version %q: want a release like 2025b", version)
	}
	names := make([]string, 0, len(zones))
	for n := range zones {
		if len(n) >= nameLen {
			return nil, fmt.Errorf("tzdata: zone name %q longer than %d bytes", n, nameLen-1)
		}
		names = append(names, n)
	}
	slices.Sort(names)
	const header = 24
	index := header
	data := index + entrySize*len(names)
	var idx, body bytes.Buffer
	for _, n := range names {
		var name [nameLen]byte
		copy(name[:], n)
		idx.Write(name[:])
		idx.Write(binary.BigEndian.AppendUint32(nil, uint32(body.Len())))
		idx.Write(binary.BigEndian.AppendUint32(nil, uint32(len(zones[n]))))
		idx.Write(make([]byte, 4))
		body.Write(zones[n])
	}
	final := data + body.Len()
	var out bytes.Buffer
	var v [12]byte
	copy(v[:], "tzdata"+version)
	out.Write(v[:])
	for _, o := range []int{index, data, final} {
		out.Write(binary.BigEndian.AppendUint32(nil, uint32(o)))
	}
	out.Write(idx.Bytes())
	out.Write(body.Bytes())
	out.Write(zoneTab)
	return out.Bytes(), nil
}

// FromDir reads every zone of a zoneinfo folder (TZif files; the posix/
// and right/ copies, posixrules and localtime are left out, as Android's
// build leaves them out), its release from tzdata.zi and its zone.tab.
func FromDir(dir string) (version string, zones map[string][]byte, zoneTab []byte, err error) {
	zones = map[string][]byte{}
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if d.IsDir() {
			if rel == "posix" || rel == "right" {
				return filepath.SkipDir
			}
			return nil
		}
		if rel == "posixrules" || rel == "localtime" || !d.Type().IsRegular() && d.Type()&fs.ModeSymlink == 0 {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil || !bytes.HasPrefix(b, []byte("TZif")) || len(rel) >= nameLen {
			return nil
		}
		zones[filepath.ToSlash(rel)] = b
		return nil
	})
	if err != nil {
		return "", nil, nil, fmt.Errorf("tzdata: %w", err)
	}
	if len(zones) == 0 {
		return "", nil, nil, fmt.Errorf("tzdata: no zones in %s", dir)
	}
	version = "0000a"
	if zi, err := os.ReadFile(filepath.Join(dir, "tzdata.zi")); err == nil {
		first, _, _ := strings.Cut(string(zi), "\n")
		if v, ok := strings.CutPrefix(first, "# version "); ok && len(strings.TrimSpace(v)) <= 5 {
			version = strings.TrimSpace(v)
		}
	}
	zoneTab, _ = os.ReadFile(filepath.Join(dir, "zone.tab"))
	return version, zones, zoneTab, nil
}

// ErrNoSource: the host has no zoneinfo to build from.
var ErrNoSource = errors.New("tzdata: the host has no zoneinfo")

// WriteFromHost writes the database built from the host's zoneinfo to
// path, unless path already holds the same release. It reports whether
// it wrote.
func WriteFromHost(path string) (bool, error) {
	if _, err := os.Stat(HostZoneinfo); err != nil {
		return false, ErrNoSource
	}
	version, zones, zoneTab, err := FromDir(HostZoneinfo)
	if err != nil {
		return false, err
	}
	if old, err := os.ReadFile(path); err == nil && len(old) >= 12 && string(bytes.TrimRight(old[:12], "\x00")) == "tzdata"+version {
		return false, nil
	}
	b, err := Build(version, zones, zoneTab)
	if err != nil {
		return false, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return false, err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return false, err
	}
	return true, os.Rename(tmp, path)
}
