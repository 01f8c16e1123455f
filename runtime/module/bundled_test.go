package module

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/agentoslab/agentlab/runtime/apps"
	"github.com/agentoslab/agentlab/runtime/supervise"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func writeTestBundle(t *testing.T, pkg string, vc int64, key ed25519.PrivateKey) (string, *apps.Manifest) {
	t.Helper()
	src := fstest.MapFS{
		"app.json":                            {Data: fmt.Appendf(nil, `{"package":%q,"label":"L","versionCode":%d,"binary":"app","services":[{"name":"S","kind":"mcp","server":"main"}]}`, pkg, vc)},
		apps.BinaryPath(apps.ABIArm64, "app"): {Data: []byte("arm")},
	}
	var b bytes.Buffer
	m, err := apps.Pack(t.Context(), src, key, &b)
	require.NoError(t, err)
	p := filepath.Join(t.TempDir(), "x.agentapp")
	require.NoError(t, os.WriteFile(p, b.Bytes(), 0o644))
	return p, m
}

func TestPackCarriesBundles(t *testing.T) {
	_, key, _ := ed25519.GenerateKey(nil)
	pz, mz := writeTestBundle(t, "org.agentos.z", 7, key)
	pa, ma := writeTestBundle(t, "org.agentos.a", 2, key)
	o := baseOptions(t)
	o.Bundles = []string{pz, pa}
	data, modes, _ := entries(t, pack(t, o))
	line := func(p string, m *apps.Manifest) string {
		b, _ := os.ReadFile(p)
		sum := sha256.Sum256(b)
		assert.Equal(t, b, data["app/"+m.App.Package+".agentapp"], "bundle carried as it is")
		assert.Equal(t, os.FileMode(0o644), modes["app/"+m.App.Package+".agentapp"])
		return fmt.Sprintf("%s %d app/%s.agentapp %s %s", m.App.Package, m.App.VersionCode, m.App.Package, hex.EncodeToString(sum[:]), m.SigningDigest)
	}
	want := "# package versionCode file sha256 signer\n" + line(pa, ma) + "\n" + line(pz, mz) + "\n"
	assert.Equal(t, want, string(data[supervise.BundledList]))

	// Without bundles there is no app/ at all.
	data, _, _ = entries(t, pack(t, baseOptions(t)))
	for n := range data {
		assert.False(t, strings.HasPrefix(n, "app/"), n)
	}
}

func TestPackRefusesBadBundles(t *testing.T) {
	_, key, _ := ed25519.GenerateKey(nil)
	p1, _ := writeTestBundle(t, "org.agentos.a", 1, key)
	p2, _ := writeTestBundle(t, "org.agentos.a", 2, key)
	bad := filepath.Join(t.TempDir(), "bad.agentapp")
	os.WriteFile(bad, []byte("not a zip"), 0o644)
	for name, bundles := range map[string][]string{"twice": {p1, p2}, "not a bundle": {bad}, "missing": {bad + ".none"}} {
		t.Run(name, func(t *testing.T) {
			o := baseOptions(t)
			o.Bundles = bundles
			assert.Error(t, Pack(t.Context(), o, &bytes.Buffer{}))
		})
	}
}
