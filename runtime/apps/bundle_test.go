package apps

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
)

// testKey is a fixed signing key so that test bundles are reproducible.
func testKey(seed byte) ed25519.PrivateKey {
	return ed25519.NewKeyFromSeed(bytes.Repeat([]byte{seed}, ed25519.SeedSize))
}

const testAppJSON = `{"package":"org.agentos.test.app","label":"Test App","versionCode":3,"versionName":"1.0.3","binary":"testapp",
"services":[{"name":"org.agentos.test.app.McpService","kind":"mcp","server":"main"}],"caller":true,"commands":["id","env"]}`

func testSource() fstest.MapFS {
	return fstest.MapFS{
		"app.json":                                 {Data: []byte(testAppJSON)},
		"bin/x86_64/testapp":                       {Data: []byte("\x7fELF x86_64 binary"), Mode: 0o755},
		"bin/arm64-v8a/testapp":                    {Data: []byte("\x7fELF arm64 binary")},
		"assets/agent-plugin/plugin.json":          {Data: []byte(`{"name":"test"}`)},
		"assets/agent-plugin/skills/test/SKILL.md": {Data: []byte("---\nname: test\n---\nbody\n")},
	}
}

func packBytes(t testing.TB, src fs.FS, key ed25519.PrivateKey) []byte {
	t.Helper()
	var buf bytes.Buffer
	if _, err := Pack(context.Background(), src, key, &buf); err != nil {
		t.Fatalf("pack: %v", err)
	}
	return buf.Bytes()
}

func TestPackIsDeterministicAndVerifies(t *testing.T) {
	t.Parallel()
	a := packBytes(t, testSource(), testKey(1))
	b := packBytes(t, testSource(), testKey(1))
	if !bytes.Equal(a, b) {
		t.Fatal("same files and key gave different bundles")
	}
	if c := packBytes(t, testSource(), testKey(2)); bytes.Equal(a, c) {
		t.Fatal("another key gave the same bundle")
	}
	m, err := VerifyBytes(a)
	if err != nil {
		t.Fatalf("verify: %v", err)
	}
	if m.App.Package != "org.agentos.test.app" || m.App.VersionCode != 3 || !m.App.Caller {
		t.Errorf("app = %+v", m.App)
	}
	wantDigest := sha256.Sum256(testKey(1).Public().(ed25519.PublicKey))
	if m.SigningDigest != hex.EncodeToString(wantDigest[:]) {
		t.Errorf("signing digest %s", m.SigningDigest)
	}
	if !slices.Equal(m.ABIs, []string{ABIArm64, ABIX8664}) {
		t.Errorf("abis %v", m.ABIs)
	}
	var names []string
	for _, f := range m.Files {
		names = append(names, f.Name)
	}
	want := []string{"app.json", "assets/agent-plugin/plugin.json", "assets/agent-plugin/skills/test/SKILL.md", "bin/arm64-v8a/testapp", "bin/x86_64/testapp"}
	if !slices.Equal(names, want) {
		t.Errorf("files %v", names)
	}
	// archive/zip reads it, with executable binaries.
	zr, err := zip.NewReader(bytes.NewReader(a), int64(len(a)))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range zr.File {
		wantMode := fs.FileMode(0o644)
		if strings.HasPrefix(f.Name, "bin/") {
			wantMode = 0o755
		}
		if f.Mode() != wantMode {
			t.Errorf("%s mode %v, want %v", f.Name, f.Mode(), wantMode)
		}
	}
}

func TestPackRefuses(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		change func(fstest.MapFS)
		reason error
		entry  string
	}{
		{"no app.json", func(m fstest.MapFS) { delete(m, "app.json") }, ErrMissing, "app.json"},
		{"bad app.json", func(m fstest.MapFS) { m["app.json"] = &fstest.MapFile{Data: []byte(`{"package":"x"}`)} }, ErrBadApp, "app.json"},
		{"big app.json", func(m fstest.MapFS) {
			m["app.json"] = &fstest.MapFile{Data: bytes.Repeat([]byte(" "), MaxAppJSONBytes+1)}
		}, ErrBadApp, "app.json"},
		{"META-INF in source", func(m fstest.MapFS) { m["META-INF/x"] = &fstest.MapFile{Data: []byte("x")} }, ErrBadName, "META-INF"},
		{"symlink", func(m fstest.MapFS) {
			m["assets/link"] = &fstest.MapFile{Data: []byte("/etc/passwd"), Mode: fs.ModeSymlink}
		}, ErrSpecial, "assets/link"},
		{"stray file", func(m fstest.MapFS) { m["README"] = &fstest.MapFile{Data: []byte("x")} }, ErrLayout, "README"},
		{"wrong binary name", func(m fstest.MapFS) { m["bin/x86_64/other"] = &fstest.MapFile{Data: []byte("x")} }, ErrLayout, "bin/x86_64/other"},
		{"unknown abi", func(m fstest.MapFS) { m["bin/mips/testapp"] = &fstest.MapFile{Data: []byte("x")} }, ErrLayout, "bin/mips/testapp"},
		{"no binary", func(m fstest.MapFS) { delete(m, "bin/x86_64/testapp"); delete(m, "bin/arm64-v8a/testapp") }, ErrLayout, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := testSource()
			tt.change(src)
			_, err := Pack(context.Background(), src, testKey(1), &bytes.Buffer{})
			var be *BundleError
			if !errors.Is(err, tt.reason) || !errors.As(err, &be) || be.Entry != tt.entry {
				t.Fatalf("err = %v, want %v for %q", err, tt.reason, tt.entry)
			}
		})
	}
}

// rawEntry is an entry of a hand-made bundle.
type rawEntry struct {
	name   string
	data   []byte
	unsign bool // leave it out of the signed manifest
}

// signedCanonical writes a canonical, signed bundle of entries without
// any of Pack's checks, so a test can make one thing wrong at a time.
func signedCanonical(t testing.TB, key ed25519.PrivateKey, entries []rawEntry, extraSigned ...File) []byte {
	t.Helper()
	sm := signedManifest{Format: bundleFormat}
	for _, e := range entries {
		if e.unsign {
			continue
		}
		sum := sha256.Sum256(e.data)
		sm.Files = append(sm.Files, File{e.name, int64(len(e.data)), hex.EncodeToString(sum[:])})
	}
	sm.Files = append(sm.Files, extraSigned...)
	slices.SortFunc(sm.Files, func(a, b File) int { return strings.Compare(a.Name, b.Name) })
	mb, _ := json.Marshal(sm)
	sb, _ := json.Marshal(signatureFile{bundleFormat, signatureAlgo,
		base64.StdEncoding.EncodeToString(key.Public().(ed25519.PublicKey)),
		base64.StdEncoding.EncodeToString(ed25519.Sign(key, mb))})
	all := append(slices.Clone(entries), rawEntry{name: ManifestName, data: mb}, rawEntry{name: SignatureName, data: sb})
	slices.SortFunc(all, func(a, b rawEntry) int { return strings.Compare(a.name, b.name) })
	var out, cd []byte
	for _, e := range all {
		ze := zipEntry{name: e.name, size: uint32(len(e.data)), crc: crc32.ChecksumIEEE(e.data), mode: entryMode(e.name), offset: uint32(len(out))}
		out = append(out, ze.local()...)
		out = append(out, e.data...)
		cd = append(cd, ze.central()...)
	}
	off := len(out)
	out = append(out, cd...)
	return append(out, endRecord(len(all), len(cd), uint32(off))...)
}

func baseEntries() []rawEntry {
	return []rawEntry{
		{name: "app.json", data: []byte(testAppJSON)},
		{name: "bin/x86_64/testapp", data: []byte("binary")},
	}
}

// rezip writes entries with archive/zip (a layout Pack never writes).
type zipItem struct {
	name   string
	data   []byte
	mode   fs.FileMode
	method uint16
}

func rezip(t testing.TB, items []zipItem) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, it := range items {
		h := &zip.FileHeader{Name: it.name, Method: it.method}
		if it.mode != 0 {
			h.SetMode(it.mode)
		}
		w, err := zw.CreateHeader(h)
		if err != nil {
			t.Fatal(err)
		}
		w.Write(it.data)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// itemsOf lists a bundle's entries as zipItems (stored, as they are).
func itemsOf(t testing.TB, b []byte) []zipItem {
	t.Helper()
	zr, err := zip.NewReader(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	var out []zipItem
	for _, f := range zr.File {
		rc, _ := f.Open()
		var buf bytes.Buffer
		buf.ReadFrom(rc)
		rc.Close()
		out = append(out, zipItem{name: f.Name, data: buf.Bytes(), mode: f.Mode(), method: zip.Store})
	}
	return out
}

func TestVerifyRejects(t *testing.T) {
	t.Parallel()
	key := testKey(1)
	good := packBytes(t, testSource(), key)
	items := itemsOf(t, good)
	with := func(f func([]zipItem) []zipItem) []byte { return rezip(t, f(slices.Clone(items))) }
	flip := func(b []byte, needle string) []byte {
		c := bytes.Clone(b)
		i := bytes.Index(c, []byte(needle))
		if i < 0 {
			t.Fatalf("%q not in bundle", needle)
		}
		c[i] ^= 0x20
		return c
	}
	other := packBytes(t, fstest.MapFS{
		"app.json":           {Data: []byte(strings.Replace(testAppJSON, `"versionCode":3`, `"versionCode":4`, 1))},
		"bin/x86_64/testapp": {Data: []byte("x")},
	}, key)
	otherSig := itemsOf(t, other)[1] // META-INF/SIGNATURE of another manifest

	tests := []struct {
		name   string
		bundle []byte
		reason error
		entry  string
	}{
		{"content changed", flip(good, "ELF x86_64"), ErrChanged, "bin/x86_64/testapp"},
		{"app.json changed", flip(good, `"Test App"`), ErrChanged, "app.json"},
		{"missing entry", with(func(it []zipItem) []zipItem {
			return slices.DeleteFunc(it, func(z zipItem) bool { return z.name == "assets/agent-plugin/plugin.json" })
		}), ErrMissing, "assets/agent-plugin/plugin.json"},
		{"extra entry", with(func(it []zipItem) []zipItem {
			return append(it, zipItem{name: "assets/evil", data: []byte("x"), method: zip.Store})
		}), ErrExtra, "assets/evil"},
		{"extra META-INF entry", with(func(it []zipItem) []zipItem {
			return append(it, zipItem{name: "META-INF/OTHER", data: []byte("x"), method: zip.Store})
		}), ErrExtra, "META-INF/OTHER"},
		{"absolute name", with(func(it []zipItem) []zipItem { return append(it, zipItem{name: "/etc/passwd", method: zip.Store}) }), ErrBadName, "/etc/passwd"},
		{"dot-dot name", with(func(it []zipItem) []zipItem { return append(it, zipItem{name: "assets/../../x", method: zip.Store}) }), ErrBadName, "assets/../../x"},
		{"backslash name", with(func(it []zipItem) []zipItem { return append(it, zipItem{name: `assets\x`, method: zip.Store}) }), ErrBadName, `assets\x`},
		{"empty segment", with(func(it []zipItem) []zipItem { return append(it, zipItem{name: "assets//x", method: zip.Store}) }), ErrBadName, "assets//x"},
		{"symlink", with(func(it []zipItem) []zipItem {
			return append(it, zipItem{name: "assets/link", data: []byte("/etc/shadow"), mode: fs.ModeSymlink | 0o777, method: zip.Store})
		}), ErrSpecial, "assets/link"},
		{"fifo", with(func(it []zipItem) []zipItem {
			return append(it, zipItem{name: "assets/fifo", mode: fs.ModeNamedPipe | 0o644, method: zip.Store})
		}), ErrSpecial, "assets/fifo"},
		{"directory", with(func(it []zipItem) []zipItem { return append(it, zipItem{name: "assets/", method: zip.Store}) }), ErrSpecial, "assets/"},
		{"duplicate", with(func(it []zipItem) []zipItem { return append(it, it[2]) }), ErrDuplicate, items[2].name},
		{"compressed", with(func(it []zipItem) []zipItem { it[2].method = zip.Deflate; return it }), ErrCompressed, items[2].name},
		{"unsigned", with(func(it []zipItem) []zipItem {
			return slices.DeleteFunc(it, func(z zipItem) bool { return z.name == SignatureName })
		}), ErrUnsigned, ""},
		{"signature of another manifest", with(func(it []zipItem) []zipItem { it[1] = otherSig; return it }), ErrBadSignature, ManifestName},
		{"same files rezipped", with(func(it []zipItem) []zipItem { return it }), ErrNonCanonical, ManifestName},
		{"zip comment", func() []byte {
			b := bytes.Clone(good)
			b[len(b)-2] = 3
			return append(b, "hi!"...)
		}(), ErrNonCanonical, ""},
		{"not a zip", []byte(strings.Repeat("not a zip ", 10)), ErrNotBundle, ""},
		{"empty", nil, ErrNotBundle, ""},
		{"malformed app.json", signedCanonical(t, key, []rawEntry{{name: "app.json", data: []byte(`{"package":`)}, {name: "bin/x86_64/testapp", data: []byte("b")}}), ErrBadApp, "app.json"},
		{"oversized app.json", signedCanonical(t, key, []rawEntry{
			{name: "app.json", data: append([]byte(testAppJSON), bytes.Repeat([]byte(" "), MaxAppJSONBytes)...)},
			{name: "bin/x86_64/testapp", data: []byte("b")}}), ErrBadApp, "app.json"},
		{"signed stray file", signedCanonical(t, key, append(baseEntries(), rawEntry{name: "lib/x.so", data: []byte("x")})), ErrLayout, "lib/x.so"},
		{"no binary", signedCanonical(t, key, baseEntries()[:1]), ErrLayout, ""},
		{"signed but missing", signedCanonical(t, key, baseEntries(), File{Name: "assets/gone", Size: 1, SHA256: strings.Repeat("0", 64)}), ErrMissing, "assets/gone"},
		{"unsigned entry in canonical zip", signedCanonical(t, key, append(baseEntries(), rawEntry{name: "assets/x", data: []byte("x"), unsign: true})), ErrExtra, "assets/x"},
		{"too many files", func() []byte {
			es := baseEntries()
			for i := 0; i < MaxFiles; i++ {
				es = append(es, rawEntry{name: fmt.Sprintf("assets/f%04d", i), data: []byte{byte(i)}})
			}
			return signedCanonical(t, key, es)
		}(), ErrTooManyFiles, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := VerifyBytes(tt.bundle)
			if !errors.Is(err, tt.reason) {
				t.Fatalf("err = %v, want %v", err, tt.reason)
			}
			var be *BundleError
			if !errors.As(err, &be) || be.Entry != tt.entry {
				t.Fatalf("err = %#v, want entry %q", err, tt.entry)
			}
			if !strings.HasPrefix(err.Error(), "bundle: ") {
				t.Errorf("message %q", err)
			}
		})
	}
	if _, err := VerifyBytes(signedCanonical(t, key, baseEntries())); err != nil {
		t.Fatalf("the hand-made canonical bundle itself must verify: %v", err)
	}
}

// hugeReader claims a size without holding the bytes.
type hugeReader struct{ size int64 }

func (h hugeReader) ReadAt(p []byte, off int64) (int, error) { return 0, errors.New("must not read") }

func TestVerifySizeLimits(t *testing.T) {
	t.Parallel()
	if _, err := Verify(hugeReader{MaxBundleBytes + 1}, MaxBundleBytes+1); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("oversized bundle: %v", err)
	}
	// A header that claims more than the limit is refused before reading.
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	w, _ := zw.CreateRaw(&zip.FileHeader{Name: "assets/bomb", Method: zip.Store, CompressedSize64: MaxBundleBytes + 1, UncompressedSize64: MaxBundleBytes + 1})
	w.Write([]byte("tiny"))
	zw.Close()
	if _, err := VerifyBytes(buf.Bytes()); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("bomb header: %v", err)
	}
}

func TestBundleOpen(t *testing.T) {
	t.Parallel()
	b := packBytes(t, testSource(), testKey(1))
	bd, err := OpenBundle(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	rc, err := bd.Open("assets/agent-plugin/plugin.json")
	if err != nil {
		t.Fatal(err)
	}
	var got bytes.Buffer
	got.ReadFrom(rc)
	rc.Close()
	if got.String() != `{"name":"test"}` {
		t.Fatalf("content %q", got.String())
	}
	for _, n := range []string{SignatureName, "nope"} {
		if _, err := bd.Open(n); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("open %s: %v", n, err)
		}
	}
}

func FuzzVerify(f *testing.F) {
	key := testKey(1)
	good := packBytes(f, testSource(), key)
	f.Add(good)
	f.Add(signedCanonical(f, key, baseEntries()))
	f.Add(rezip(f, itemsOf(f, good)))
	f.Add([]byte("PK\x05\x06" + strings.Repeat("\x00", 18)))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := VerifyBytes(data)
		if err != nil {
			var be *BundleError
			if !errors.As(err, &be) {
				t.Fatalf("error is not a *BundleError: %v", err)
			}
			return
		}
		if m.App == nil || len(m.SigningDigest) != 64 || len(m.ABIs) == 0 {
			t.Fatalf("accepted bundle with manifest %+v", m)
		}
	})
}

// FuzzVerifyByteChange: changing any one byte of a signed bundle to any
// other value is rejected.
func FuzzVerifyByteChange(f *testing.F) {
	good := packBytes(f, testSource(), testKey(1))
	for _, off := range []uint{0, 10, 14, 26, 40, uint(len(good) / 2), uint(len(good) - 30), uint(len(good) - 1)} {
		f.Add(off, byte(1))
		f.Add(off, byte(0x80))
	}
	f.Fuzz(func(t *testing.T, off uint, x byte) {
		if x == 0 {
			return
		}
		b := bytes.Clone(good)
		i := off % uint(len(b))
		b[i] ^= x
		if _, err := VerifyBytes(b); err == nil {
			t.Fatalf("byte %d changed (^%#x) and the bundle still verifies", i, x)
		}
	})
}

func BenchmarkVerify(b *testing.B) {
	src := testSource()
	bin := make([]byte, 16<<20)
	for i := range bin {
		bin[i] = byte(i * 7)
	}
	src["bin/x86_64/testapp"] = &fstest.MapFile{Data: bin}
	bundle := packBytes(b, src, testKey(1))
	b.SetBytes(int64(len(bundle)))
	b.ResetTimer()
	for b.Loop() {
		if _, err := VerifyBytes(bundle); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkTableByUID is the caller channel's lookup on every connection.
func BenchmarkTableByUID(b *testing.B) {
	tf := emptyTable()
	for i := 0; i < 200; i++ {
		tf.Packages = append(tf.Packages, Package{Name: fmt.Sprintf("org.bench.p%03d", i), UID: 10100 + i, SigningDigest: strings.Repeat("a", 64), CodeDir: "/c", DataDir: "/d"})
	}
	t := &Table{tf: tf, changed: make(chan struct{})}
	for b.Loop() {
		if ps := t.ByUID(10250); len(ps) != 1 {
			b.Fatal(ps)
		}
	}
}
