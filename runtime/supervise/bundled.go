package supervise

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/agentoslab/agentlab/runtime/apps"
)

// BundledList is the module's list of the app bundles it carries
// (spec §11 apks.sh): one line per bundle,
//
//	<package> <versionCode> <app/FILE> <sha256 of FILE> <signing digest>
//
// blank lines and lines starting with # ignored.
const BundledList = "app/apps.list"

// Results of installing one bundled app at boot (spec §11's words).
const (
	BundledSame        = "same"         // installed at this versionCode
	BundledNewer       = "newer"        // a newer version is installed: never downgraded
	BundledInstalled   = "installed"    // was missing
	BundledUpgraded    = "upgraded"     // replaced an older version
	BundledSigMismatch = "sig_mismatch" // installed (or the file) by another signer: left alone
	BundledCorrupt     = "corrupt"      // the file does not match the list
	BundledFailed      = "failed"       // the installer refused it
	BundledBadList     = "bad_list"     // the list is malformed: nothing installed
)

// bundledName is the file the boot's results go to under the root
// (0644: `ctl status` and diagnostics read it as the runtime).
const bundledName = "bundled"

// BundledResult is what the boot did with one bundled app.
type BundledResult struct {
	Package string
	Result  string
	Detail  string
}

type bundledEntry struct {
	pkg         string
	versionCode int64
	file        string
	sha256      string
	signer      string
}

var (
	bundledPkgRe  = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_]*(\.[A-Za-z][A-Za-z0-9_]*)+$`)
	bundledFileRe = regexp.MustCompile(`^app/[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)
	hex64Re       = regexp.MustCompile(`^[0-9a-f]{64}$`)
)

// maxBundledList bounds the list (a module carries a handful of apps).
const maxBundledList = 64 << 10

// parseBundledList parses the list; any bad line rejects it whole, so a
// half-read list never installs half the apps.
func parseBundledList(b []byte) ([]bundledEntry, error) {
	if len(b) > maxBundledList {
		return nil, fmt.Errorf("%d bytes, the limit is %d", len(b), maxBundledList)
	}
	var out []bundledEntry
	seen := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) != 5 {
			return nil, fmt.Errorf("line %d: want 5 fields, got %d", n, len(f))
		}
		vc, err := strconv.ParseInt(f[1], 10, 64)
		switch {
		case !bundledPkgRe.MatchString(f[0]) || len(f[0]) > 255:
			return nil, fmt.Errorf("line %d: bad package name", n)
		case err != nil || vc <= 0 || len(f[1]) > 18:
			return nil, fmt.Errorf("line %d: bad versionCode", n)
		case !bundledFileRe.MatchString(f[2]) || strings.Contains(f[2], ".."):
			return nil, fmt.Errorf("line %d: bad file name", n)
		case !hex64Re.MatchString(f[3]) || !hex64Re.MatchString(f[4]):
			return nil, fmt.Errorf("line %d: want lowercase hex SHA-256 digests", n)
		case seen[f[0]]:
			return nil, fmt.Errorf("line %d: %s listed twice", n, f[0])
		}
		seen[f[0]] = true
		out = append(out, bundledEntry{pkg: f[0], versionCode: vc, file: f[2], sha256: f[3], signer: f[4]})
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// installBundled installs or upgrades the module's bundled apps: a
// missing or older one is installed, an equal or newer one is left, and
// nothing is ever downgraded or uninstalled (an owner's newer version or
// removal of a bundled app is theirs). A module without a list has
// nothing to do.
func installBundled(ctx context.Context, in *apps.Installer, modDir string, log *slog.Logger) []BundledResult {
	if modDir == "" {
		return nil
	}
	b, err := os.ReadFile(filepath.Join(modDir, BundledList))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	var list []bundledEntry
	if err == nil {
		list, err = parseBundledList(b)
	}
	if err != nil {
		log.Error("supervise: bundled apps: list unreadable; nothing installed", "err", err)
		return []BundledResult{{Result: BundledBadList, Detail: err.Error()}}
	}
	installed, err := in.Packages()
	if err != nil {
		log.Error("supervise: bundled apps: package table unreadable", "err", err)
		return []BundledResult{{Result: BundledFailed, Detail: err.Error()}}
	}
	have := map[string]apps.Package{}
	for _, p := range installed {
		have[p.Name] = p
	}
	var out []BundledResult
	for _, e := range list {
		r := installOneBundled(ctx, in, modDir, e, have)
		r.Package = e.pkg
		log.Info("supervise: bundled app", "package", e.pkg, "versionCode", e.versionCode, "result", r.Result, "detail", r.Detail)
		out = append(out, r)
	}
	return out
}

func installOneBundled(ctx context.Context, in *apps.Installer, modDir string, e bundledEntry, have map[string]apps.Package) BundledResult {
	old, isInstalled := have[e.pkg]
	if isInstalled {
		switch {
		case old.SigningDigest != e.signer:
			return BundledResult{Result: BundledSigMismatch, Detail: "installed by another signer"}
		case old.VersionCode == e.versionCode:
			return BundledResult{Result: BundledSame}
		case old.VersionCode > e.versionCode:
			return BundledResult{Result: BundledNewer, Detail: fmt.Sprintf("installed versionCode %d", old.VersionCode)}
		}
	}
	path := filepath.Join(modDir, e.file)
	data, err := os.ReadFile(path)
	if err != nil {
		return BundledResult{Result: BundledCorrupt, Detail: err.Error()}
	}
	if sum := sha256.Sum256(data); hex.EncodeToString(sum[:]) != e.sha256 {
		return BundledResult{Result: BundledCorrupt, Detail: "SHA-256 differs from the list"}
	}
	m, err := apps.VerifyBytes(data)
	if err != nil {
		return BundledResult{Result: BundledCorrupt, Detail: err.Error()}
	}
	switch {
	case m.SigningDigest != e.signer:
		return BundledResult{Result: BundledSigMismatch, Detail: "the bundle's signer is not the listed one"}
	case m.App.Package != e.pkg || m.App.VersionCode != e.versionCode:
		return BundledResult{Result: BundledCorrupt, Detail: fmt.Sprintf("the bundle is %s %d", m.App.Package, m.App.VersionCode)}
	}
	if _, err := in.Install(ctx, path); err != nil {
		return BundledResult{Result: BundledFailed, Detail: err.Error()}
	}
	if isInstalled {
		return BundledResult{Result: BundledUpgraded, Detail: fmt.Sprintf("from versionCode %d", old.VersionCode)}
	}
	return BundledResult{Result: BundledInstalled}
}

// marshalBundled renders the results file: "<package> <result>" lines
// ("-" for a list that named none).
func marshalBundled(rs []BundledResult) []byte {
	var b bytes.Buffer
	for _, r := range rs {
		pkg := r.Package
		if pkg == "" {
			pkg = "-"
		}
		fmt.Fprintf(&b, "%s %s\n", pkg, r.Result)
	}
	return b.Bytes()
}

// ReadBundled reads the results of the last boot's bundled installs.
func ReadBundled(root string) ([]BundledResult, error) {
	f, err := os.Open(filepath.Join(root, bundledName))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []BundledResult
	sc := bufio.NewScanner(io.LimitReader(f, maxBundledList))
	for sc.Scan() {
		pkg, res, ok := strings.Cut(sc.Text(), " ")
		if !ok {
			continue
		}
		if pkg == "-" {
			pkg = ""
		}
		out = append(out, BundledResult{Package: pkg, Result: res})
	}
	return out, sc.Err()
}
