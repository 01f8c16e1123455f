package reports

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"
)

// chunkReader returns at most n bytes per Read, so read boundaries fall
// everywhere.
type chunkReader struct {
	r io.Reader
	n int
}

func (c chunkReader) Read(p []byte) (int, error) {
	if len(p) > c.n {
		p = p[:c.n]
	}
	return c.r.Read(p)
}

// naiveLeaks is the reference: every occurrence, found in the whole data.
func naiveLeaks(name string, data []byte, secrets []Secret) []Leak {
	var out []Leak
	for _, s := range secrets {
		var l Leak
		number := allDigits(s.Value)
		for i := 0; i+len(s.Value) <= len(data); i++ {
			end := i + len(s.Value)
			if number && (i > 0 && isDigit(data[i-1]) || end < len(data) && isDigit(data[end])) {
				continue
			}
			if bytes.Equal(data[i:end], s.Value) {
				if l.Count == 0 {
					l = Leak{File: name, Offset: int64(i), Secret: s.Name}
				}
				l.Count++
			}
		}
		if l.Count > 0 {
			out = append(out, l)
		}
	}
	sortLeaks(out)
	return out
}

func sortLeaks(ls []Leak) {
	for i := 1; i < len(ls); i++ {
		for j := i; j > 0 && ls[j].Offset < ls[j-1].Offset; j-- {
			ls[j], ls[j-1] = ls[j-1], ls[j]
		}
	}
}

func TestScanForSecrets(t *testing.T) {
	t.Parallel()
	key := Secret{Name: "model-key", Value: []byte("sk-ant-api03-SECRETSECRET")}
	token := Secret{Name: "pairing-token", Value: []byte("SECRET-DEVICE-TOKEN")}
	pem := Secret{Name: "bundle-signing-key", Value: []byte("MC4CAQAwBQYDK2VwBCIEIKx\nline2")}
	secrets := []Secret{key, token, pem}

	dir := t.TempDir()
	write := func(rel string, data []byte) string {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	clean := write("clean.txt", []byte("nothing to see; sk-ant-api03-SECRETSECRE (one short)"))
	small := write("artifacts/a/logcat.txt", []byte("x SECRET-DEVICE-TOKEN y SECRET-DEVICE-TOKEN z sk-ant-api03-SECRETSECRET"))
	// A large file with the key straddling the first read boundary and the
	// PEM fragment at the very end.
	big := bytes.Repeat([]byte("."), 3*scanBufSize)
	copy(big[scanBufSize-7:], key.Value)
	copy(big[len(big)-len(pem.Value):], pem.Value)
	bigPath := write("artifacts/b/dump.bin", big)
	// A symlink to a file with a secret is not followed.
	if err := os.Symlink(small, filepath.Join(dir, "artifacts", "link.txt")); err != nil {
		t.Fatal(err)
	}

	leaks, err := ScanForSecrets([]string{dir, clean}, secrets)
	if err != nil {
		t.Fatal(err)
	}
	// Files in walk (lexical) order, leaks by offset within a file.
	want := []Leak{
		{File: small, Offset: 2, Secret: "pairing-token", Count: 2},
		{File: small, Offset: 46, Secret: "model-key", Count: 1},
		{File: bigPath, Offset: scanBufSize - 7, Secret: "model-key", Count: 1},
		{File: bigPath, Offset: int64(len(big) - len(pem.Value)), Secret: "bundle-signing-key", Count: 1},
	}
	if !reflect.DeepEqual(leaks, want) {
		t.Errorf("leaks =\n%v\nwant\n%v", leaks, want)
	}
	for _, l := range leaks {
		for _, s := range secrets {
			if strings.Contains(l.String(), string(s.Value)) || strings.Contains(fmt.Sprintf("%+v %#v", l, l), string(s.Value)) {
				t.Errorf("a leak report shows the secret's value: %s", l)
			}
		}
	}

	// A symlink given as a path is followed; leaks name the file it points
	// to.
	leaks, err = ScanForSecrets([]string{filepath.Join(dir, "artifacts", "link.txt")}, secrets)
	if err != nil || len(leaks) != 2 || leaks[0].File != small {
		t.Errorf("symlinked path: %v, %v", leaks, err)
	}

	// A path that cannot be read is an error; the rest is still scanned.
	leaks, err = ScanForSecrets([]string{filepath.Join(dir, "missing"), small}, secrets)
	if err == nil || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing path: err = %v", err)
	}
	if len(leaks) != 2 {
		t.Errorf("missing path: %d leaks from the readable file, want 2", len(leaks))
	}

	if _, err := ScanForSecrets([]string{dir}, []Secret{{Name: "empty"}}); !errors.Is(err, ErrEmptySecret) {
		t.Errorf("empty secret: %v", err)
	}
	if leaks, err := ScanForSecrets([]string{dir}, nil); leaks != nil || err != nil {
		t.Errorf("no secrets: %v, %v", leaks, err)
	}
}

// TestSecretNeverPrinted: a Secret formatted or logged shows its name only.
func TestSecretNeverPrinted(t *testing.T) {
	t.Parallel()
	s := Secret{Name: "model-key", Value: []byte("sk-live-123")}
	var logged bytes.Buffer
	slog.New(slog.NewTextHandler(&logged, nil)).Info("scan", "secret", s)
	slog.New(slog.NewJSONHandler(&logged, nil)).Info("scan", "secret", s)
	outs := []string{
		fmt.Sprint(s), fmt.Sprintf("%v %+v %#v %s %q %x %X %d", s, s, s, s, s, s, s, s),
		fmt.Sprintf("%+v", struct{ S Secret }{s}), fmt.Sprintf("%v", []Secret{s}), logged.String(),
	}
	for _, o := range outs {
		if strings.Contains(o, "sk-live-123") || strings.Contains(o, fmt.Sprintf("%x", "sk-live-123")) {
			t.Errorf("secret value printed: %s", o)
		}
		if !strings.Contains(o, "model-key") {
			t.Errorf("secret name missing: %s", o)
		}
	}
}

// TestPairingCodeInANumber: a pairing code's digits inside a timestamp's
// nanoseconds are not the code (that failed a whole suite run as a leak);
// the code on its own, quoted or at either end of a file is.
func TestPairingCodeInANumber(t *testing.T) {
	t.Parallel()
	code := Secret{Name: "pairing code", Value: []byte("542615")}
	cases := map[string]int{
		`"start": "2026-12-02T07:00:48.542615995Z"`: 0,
		`size 1542615 bytes`:                        0,
		`pairing code 542615 shown`:                 1,
		`{"code":"542615"}`:                         1,
		`542615`:                                    1,
		`542615 and 542615x and x542615`:            3,
	}
	for text, want := range cases {
		got := naiveLeaks("f", []byte(text), []Secret{code})
		sc := newScanner([]Secret{code})
		streamed, err := sc.scan(bytes.NewReader([]byte(text)), "f")
		if err != nil || !reflect.DeepEqual(got, streamed) {
			t.Errorf("%q: streamed %v (%v), naive %v", text, streamed, err, got)
		}
		n := 0
		if len(got) == 1 {
			n = got[0].Count
		}
		if n != want {
			t.Errorf("%q: %d occurrences, want %d", text, n, want)
		}
	}
}

// TestScanBoundaries scans through readers that split the data at every
// possible place and compares with a whole-buffer search.
func TestScanBoundaries(t *testing.T) {
	t.Parallel()
	data := []byte("4829aaaXabcabcabXXabcaaaa-abca-ab 482913 1482913 4829134 \"482913\"482913")
	secrets := []Secret{{"a3", []byte("aaa")}, {"abc", []byte("abc")}, {"long", []byte("abcabcab")}, {"one", []byte("X")},
		{"code", []byte("482913")}, {"short code", []byte("4829")}}
	want := naiveLeaks("f", data, secrets)
	for n := 1; n <= len(data)+1; n++ {
		sc := newScanner(secrets)
		got, err := sc.scan(chunkReader{bytes.NewReader(data), n}, "f")
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("chunk %d: got %v (%v), want %v", n, got, err, want)
		}
	}
	sc := newScanner(secrets)
	if got, _ := sc.scan(iotest.OneByteReader(bytes.NewReader(data)), "f"); !reflect.DeepEqual(got, want) {
		t.Errorf("one byte at a time: %v, want %v", got, want)
	}
	if _, err := sc.scan(iotest.ErrReader(errors.New("disk gone")), "f"); err == nil {
		t.Error("a read error was swallowed")
	}
}

// FuzzScanBoundary checks the streaming scan against a whole-buffer search
// for arbitrary data, secrets and read sizes.
func FuzzScanBoundary(f *testing.F) {
	f.Add([]byte("xxSECRETxx"), []byte("SECRET"), []byte("xx"), uint8(3))
	f.Add([]byte("aaaaaaaa"), []byte("aaa"), []byte("aa"), uint8(1))
	f.Add([]byte("abababab"), []byte("abab"), []byte("b"), uint8(5))
	f.Add(bytes.Repeat([]byte("k"), 300), []byte("kkkkkkkkkkkkkkkkkkkkkkkkkkkk"), []byte("kk"), uint8(7))
	f.Add([]byte("t=07:00:48.542615995Z code 542615 x542615"), []byte("542615"), []byte("5"), uint8(4))
	f.Add([]byte("123123123"), []byte("123"), []byte("3"), uint8(2))
	f.Fuzz(func(t *testing.T, data, s1, s2 []byte, chunk uint8) {
		if len(s1) == 0 || len(s2) == 0 {
			return
		}
		secrets := []Secret{{"s1", s1}, {"s2", s2}}
		want := naiveLeaks("f", data, secrets)
		sc := newScanner(secrets)
		got, err := sc.scan(chunkReader{bytes.NewReader(data), int(chunk%64) + 1}, "f")
		if err != nil {
			t.Fatal(err)
		}
		// Leaks at equal offsets may come in either order.
		sortLeaks(got)
		if len(got) != len(want) {
			t.Fatalf("got %v, want %v", got, want)
		}
		for _, w := range want {
			found := false
			for _, g := range got {
				found = found || g == w
			}
			if !found {
				t.Fatalf("got %v, want %v", got, want)
			}
		}
	})
}
