// Package modzip reads a Magisk/KernelSU module zip on the host: it
// validates module.prop (lab-reference C.1) and lists the files a
// manual install stages into /data/adb/modules_update/<id>.
package modzip

import (
	"archive/zip"
	"bufio"
	"fmt"
	"io"
	"io/fs"
	"regexp"
	"strconv"
	"strings"

	"github.com/agentoslab/agentlab/devices"
)

// MaxPropSize bounds module.prop: it is a handful of single-line fields.
const MaxPropSize = 64 << 10

var idRE = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9._-]+$`)

// Prop is a parsed module.prop.
type Prop struct {
	ID          string
	Name        string
	Version     string
	VersionCode int64
	Author      string
	Description string
}

// ParseProp parses and validates module.prop: LF lines of key=value; id
// must match ^[a-zA-Z][a-zA-Z0-9._-]+$ and versionCode be an integer.
// Errors wrap devices.ErrInvalidModule and name the field.
func ParseProp(b []byte) (Prop, error) {
	if len(b) > MaxPropSize {
		return Prop{}, fmt.Errorf("module.prop of %d bytes: %w", len(b), devices.ErrInvalidModule)
	}
	// Magisk reads module.prop with LF endings only; a CR would end up
	// inside every value.
	if strings.Contains(string(b), "\r") {
		return Prop{}, fmt.Errorf("module.prop has CR line endings: %w", devices.ErrInvalidModule)
	}
	var p Prop
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	sc.Buffer(make([]byte, 4096), MaxPropSize)
	seenCode := false
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(strings.TrimSpace(line), "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		switch k {
		case "id":
			p.ID = v
		case "name":
			p.Name = v
		case "version":
			p.Version = v
		case "versionCode":
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return Prop{}, fmt.Errorf("module.prop versionCode %q: %w", v, devices.ErrInvalidModule)
			}
			p.VersionCode, seenCode = n, true
		case "author":
			p.Author = v
		case "description":
			p.Description = v
		}
	}
	if err := sc.Err(); err != nil {
		return Prop{}, fmt.Errorf("module.prop: %w: %w", devices.ErrInvalidModule, err)
	}
	if !idRE.MatchString(p.ID) {
		return Prop{}, fmt.Errorf("module.prop id %q: %w", p.ID, devices.ErrInvalidModule)
	}
	if !seenCode {
		return Prop{}, fmt.Errorf("module.prop has no versionCode: %w", devices.ErrInvalidModule)
	}
	return p, nil
}

// File is one file a manual install copies into the module directory.
type File struct {
	Name string // slash-separated, relative to the module root
	Mode fs.FileMode
	f    *zip.File
}

// Open opens the file's contents.
func (f File) Open() (io.ReadCloser, error) { return f.f.Open() }

// Module is an opened module zip.
type Module struct {
	Prop  Prop
	Files []File
	rc    *zip.ReadCloser
}

// Open opens and validates the zip at path.
func Open(path string) (*Module, error) {
	rc, err := zip.OpenReader(path)
	if err != nil {
		return nil, fmt.Errorf("open module zip: %w: %w", devices.ErrInvalidModule, err)
	}
	m := &Module{rc: rc}
	var prop *zip.File
	for _, f := range rc.File {
		name := f.Name
		if f.FileInfo().IsDir() || strings.HasPrefix(name, "META-INF/") {
			continue
		}
		if !fs.ValidPath(name) {
			rc.Close()
			return nil, fmt.Errorf("module zip entry %q: %w", name, devices.ErrInvalidModule)
		}
		if name == "module.prop" {
			prop = f
		}
		// customize.sh is sourced by Magisk's installer, not kept in the module.
		if name == "customize.sh" {
			continue
		}
		mode := f.Mode().Perm()
		if strings.HasSuffix(name, ".sh") || mode&0o111 != 0 {
			mode = 0o755
		} else {
			mode = 0o644
		}
		m.Files = append(m.Files, File{Name: name, Mode: mode, f: f})
	}
	if prop == nil {
		rc.Close()
		return nil, fmt.Errorf("module zip has no module.prop: %w", devices.ErrInvalidModule)
	}
	r, err := prop.Open()
	if err != nil {
		rc.Close()
		return nil, fmt.Errorf("read module.prop: %w: %w", devices.ErrInvalidModule, err)
	}
	b, err := io.ReadAll(io.LimitReader(r, MaxPropSize+1))
	r.Close()
	if err != nil {
		rc.Close()
		return nil, fmt.Errorf("read module.prop: %w: %w", devices.ErrInvalidModule, err)
	}
	if m.Prop, err = ParseProp(b); err != nil {
		rc.Close()
		return nil, err
	}
	return m, nil
}

// Close closes the zip.
func (m *Module) Close() error { return m.rc.Close() }
