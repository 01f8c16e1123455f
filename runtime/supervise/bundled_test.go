package supervise

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/agentoslab/agentlab/internal/testenv"
	"github.com/agentoslab/agentlab/runtime/apps"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// bundledModule is a module directory whose app/ holds bundles.
type bundledModule struct {
	t   *testing.T
	dir string
}

// add packs pkg at versionCode with key into app/ and returns its list
// line.
func (m bundledModule) add(pkg string, vc int64, key ed25519.PrivateKey) string {
	m.t.Helper()
	src := fstest.MapFS{
		"app.json":                            {Data: fmt.Appendf(nil, `{"package":%q,"label":"L","versionCode":%d,"binary":"app","services":[{"name":"S","kind":"mcp","server":"main"}]}`, pkg, vc)},
		apps.BinaryPath(apps.ABIX8664, "app"): {Data: fmt.Appendf(nil, "v%d", vc)},
		apps.BinaryPath(apps.ABIArm64, "app"): {Data: fmt.Appendf(nil, "v%d", vc)},
	}
	var b bytes.Buffer
	man, err := apps.Pack(m.t.Context(), src, key, &b)
	require.NoError(m.t, err)
	name := fmt.Sprintf("app/%s-%d.agentapp", pkg, vc)
	require.NoError(m.t, os.MkdirAll(filepath.Join(m.dir, "app"), 0o755))
	require.NoError(m.t, os.WriteFile(filepath.Join(m.dir, name), b.Bytes(), 0o644))
	sum := sha256.Sum256(b.Bytes())
	return fmt.Sprintf("%s %d %s %s %s", pkg, vc, name, hex.EncodeToString(sum[:]), man.SigningDigest)
}

func (m bundledModule) list(lines ...string) {
	require.NoError(m.t, os.WriteFile(filepath.Join(m.dir, BundledList), []byte(strings.Join(lines, "\n")+"\n"), 0o644))
}

// Each boot is a step on the same installer: what the boots before it
// installed is what the next one finds.
func TestBundledAppsAtBoot(t *testing.T) {
	testenv.NeedRoot(t)
	tmp := t.TempDir()
	os.WriteFile(filepath.Join(tmp, "passwd"), []byte("root:x:0:0::/root:/bin/sh\n"), 0o644)
	in, err := apps.OpenInstaller(filepath.Join(tmp, "apps"), &apps.InstallerOptions{ABI: apps.ABIX8664,
		PasswdFile: filepath.Join(tmp, "passwd"), AndroidPackagesList: filepath.Join(tmp, "none")})
	require.NoError(t, err)
	defer in.Close()
	m := bundledModule{t: t, dir: filepath.Join(tmp, "module")}
	_, key, _ := ed25519.GenerateKey(nil)
	_, other, _ := ed25519.GenerateKey(nil)
	const a, b, c = "org.agentos.b.a", "org.agentos.b.b", "org.agentos.b.c"
	a2, a1, a3 := m.add(a, 2, key), m.add(a, 1, key), m.add(a, 3, key)
	bOther := m.add(b, 1, other)
	c1 := m.add(c, 1, key)
	corruptC := strings.Replace(c1, " "+strings.Fields(c1)[3]+" ", " "+strings.Repeat("0", 64)+" ", 1)

	versions := func() map[string]int64 {
		ps, err := in.Packages()
		require.NoError(t, err)
		out := map[string]int64{}
		for _, p := range ps {
			out[p.Name] = p.VersionCode
		}
		return out
	}
	for _, step := range []struct {
		name  string
		lines []string
		want  []BundledResult
		table map[string]int64
	}{
		{"missing: installed", []string{"# bundled", a2, ""}, []BundledResult{{Package: a, Result: BundledInstalled}}, map[string]int64{a: 2}},
		{"equal: same", []string{a2}, []BundledResult{{Package: a, Result: BundledSame}}, map[string]int64{a: 2}},
		{"older bundle: never downgraded", []string{a1}, []BundledResult{{Package: a, Result: BundledNewer}}, map[string]int64{a: 2}},
		{"newer bundle: upgraded", []string{a3}, []BundledResult{{Package: a, Result: BundledUpgraded}}, map[string]int64{a: 3}},
		{"file not the listed one: corrupt", []string{corruptC}, []BundledResult{{Package: c, Result: BundledCorrupt}}, map[string]int64{a: 3}},
		{"bad list: nothing installed", []string{c1, "org.agentos.b.d 1 app/x"}, []BundledResult{{Result: BundledBadList}}, map[string]int64{a: 3}},
		{"another signer than listed: sig_mismatch", []string{strings.Replace(bOther, strings.Fields(bOther)[4], strings.Fields(c1)[4], 1)},
			[]BundledResult{{Package: b, Result: BundledSigMismatch}}, map[string]int64{a: 3}},
		{"dropped from the list: never removed", []string{c1}, []BundledResult{{Package: c, Result: BundledInstalled}}, map[string]int64{a: 3, c: 1}},
	} {
		t.Run(step.name, func(t *testing.T) {
			m.list(step.lines...)
			got := installBundled(t.Context(), in, m.dir, slog.New(slog.DiscardHandler))
			for i := range got {
				got[i].Detail = ""
			}
			assert.Equal(t, step.want, got)
			assert.Equal(t, step.table, versions())
		})
	}

	// An installed app by another signer is left alone whatever the
	// versions.
	m.list(m.add(a, 9, other))
	got := installBundled(t.Context(), in, m.dir, slog.New(slog.DiscardHandler))
	require.Len(t, got, 1)
	assert.Equal(t, BundledSigMismatch, got[0].Result)
	assert.Equal(t, int64(3), versions()[a])

	// Results round-trip through the file the boot writes.
	root := t.TempDir()
	want := []BundledResult{{Package: a, Result: BundledSame}, {Result: BundledBadList}}
	require.NoError(t, os.WriteFile(filepath.Join(root, bundledName), marshalBundled(want), 0o644))
	rs, err := ReadBundled(root)
	require.NoError(t, err)
	assert.Equal(t, want, rs)
}

func TestBundledNoModuleOrList(t *testing.T) {
	assert.Nil(t, installBundled(t.Context(), nil, "", slog.New(slog.DiscardHandler)))
	assert.Nil(t, installBundled(t.Context(), nil, t.TempDir(), slog.New(slog.DiscardHandler)))
}

func FuzzParseBundledList(f *testing.F) {
	d := strings.Repeat("ab", 32)
	f.Add([]byte("org.x.y 3 app/y.agentapp " + d + " " + d + "\n# c\n\n"))
	f.Add([]byte("org.x.y 3 app/../y " + d + " " + d))
	f.Add([]byte("a 1 2 3 4 5"))
	f.Fuzz(func(t *testing.T, b []byte) {
		es, err := parseBundledList(b)
		if err != nil {
			return
		}
		for _, e := range es {
			if !bundledFileRe.MatchString(e.file) || strings.Contains(e.file, "..") || e.versionCode <= 0 {
				t.Fatalf("accepted %+v", e)
			}
		}
	})
}

// The supervisor installs the module's bundled apps before the runtime's
// first start: the runtime finds them in the table, and the results file
// says what the boot did.
func TestSupervisorInstallsBundledBeforeTheRuntime(t *testing.T) {
	_, key, _ := ed25519.GenerateKey(nil)
	const pkg = "org.agentos.b.boot"
	h := start(t, []string{"run"}, func(o *Options) {
		m := bundledModule{t: t, dir: o.ModDir}
		m.list(m.add(pkg, 4, key))
		o.Installer.FirstUID, o.Installer.LastUID = 10700, 10799
	})
	h.await("runtime up", func(s Status) bool { return s.RuntimePID > 0 })
	rs, err := ReadBundled(h.root)
	require.NoError(t, err)
	assert.Equal(t, []BundledResult{{Package: pkg, Result: BundledInstalled}}, rs)
	tbl, err := apps.OpenTable(h.sup.Paths().Apps(), nil)
	require.NoError(t, err)
	defer tbl.Close()
	p, ok := tbl.ByName(pkg)
	require.True(t, ok, "not in the table")
	assert.Equal(t, int64(4), p.VersionCode)
}
