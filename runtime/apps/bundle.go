package apps

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"runtime"
	"slices"
	"strings"
	"unicode/utf8"
)

// Bundle layout and limits.
const (
	AppJSONName   = "app.json"
	ManifestName  = "META-INF/MANIFEST.json"
	SignatureName = "META-INF/SIGNATURE"
	// PluginDir holds the app's Agent Plugin (plugin.json, skills/).
	PluginDir = "assets/agent-plugin"

	// MaxBundleBytes bounds a bundle file and the sum of its entries.
	MaxBundleBytes = 256 << 20
	// MaxFiles bounds the entries of a bundle, META-INF included.
	MaxFiles = 1024

	maxManifestBytes  = 1 << 20
	maxSignatureBytes = 4 << 10
	maxNameBytes      = 255
	maxNameDepth      = 16
)

// ABIs a bundle can carry a binary for (bin/<abi>/<binary>).
const (
	ABIArm64 = "arm64-v8a"
	ABIX8664 = "x86_64"
)

// KnownABIs lists the ABIs in bundle order.
var KnownABIs = []string{ABIArm64, ABIX8664}

// HostABI is the ABI of the running binary ("" when it has none).
func HostABI() string {
	switch runtime.GOARCH {
	case "arm64":
		return ABIArm64
	case "amd64":
		return ABIX8664
	}
	return ""
}

// BinaryPath is the bundle path of the app's binary for abi.
func BinaryPath(abi, binary string) string { return "bin/" + abi + "/" + binary }

// File is one signed file of a bundle.
type File struct {
	Name   string `json:"name"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}

// Manifest is what a verified bundle says: its app, its files and its
// signer.
type Manifest struct {
	App *App
	// Files are the signed files sorted by name (META-INF excluded).
	Files []File
	// PublicKey is the signer's ed25519 key.
	PublicKey ed25519.PublicKey
	// SigningDigest is SigningDigest(PublicKey).
	SigningDigest string
	// ContentDigest is the SHA-256 (hex) of the signed manifest: two
	// bundles with the same ContentDigest carry the same files.
	ContentDigest string
	// ABIs are the ABIs the bundle has a binary for, in KnownABIs order.
	ABIs []string
}

// signedManifest is META-INF/MANIFEST.json.
type signedManifest struct {
	Format int    `json:"format"`
	Files  []File `json:"files"`
}

// signatureFile is META-INF/SIGNATURE.
type signatureFile struct {
	Format    int    `json:"format"`
	Algorithm string `json:"algorithm"`
	PublicKey string `json:"publicKey"`
	Signature string `json:"signature"`
}

const (
	bundleFormat  = 1
	signatureAlgo = "ed25519"
)

// checkName returns why name cannot be an entry name ("" if it can):
// relative, slash-separated, no empty, "." or ".." segments, no
// backslashes or control characters, valid UTF-8, bounded length and depth.
func checkName(name string) string {
	switch {
	case name == "":
		return "empty name"
	case len(name) > maxNameBytes:
		return fmt.Sprintf("longer than %d bytes", maxNameBytes)
	case !utf8.ValidString(name):
		return "not UTF-8"
	case strings.HasPrefix(name, "/"):
		return "absolute path"
	case strings.ContainsRune(name, '\\'):
		return "backslash in name"
	}
	for _, r := range name {
		if r < 0x20 || r == 0x7f {
			return "control character in name"
		}
	}
	segs := strings.Split(name, "/")
	if len(segs) > maxNameDepth {
		return fmt.Sprintf("deeper than %d levels", maxNameDepth)
	}
	for _, s := range segs {
		switch s {
		case "":
			return "empty path segment"
		case ".", "..":
			return fmt.Sprintf("%q segment", s)
		}
	}
	return ""
}

// checkLayout checks where files may be: app.json, bin/<abi>/<binary>
// for known ABIs only, and anything under assets/. It returns the ABIs
// with a binary.
func checkLayout(app *App, names []string) ([]string, error) {
	var abis []string
	for _, n := range names {
		switch {
		case n == AppJSONName:
		case strings.HasPrefix(n, "assets/"):
		case strings.HasPrefix(n, "bin/"):
			segs := strings.Split(n, "/")
			if len(segs) != 3 || !slices.Contains(KnownABIs, segs[1]) || segs[2] != app.Binary {
				return nil, bundleErr(n, ErrLayout, "bin/ holds only bin/<abi>/%s for ABIs %s", app.Binary, strings.Join(KnownABIs, ", "))
			}
			abis = append(abis, segs[1])
		default:
			return nil, bundleErr(n, ErrLayout, "a bundle holds app.json, bin/ and assets/ only")
		}
	}
	if len(abis) == 0 {
		return nil, bundleErr("", ErrLayout, "no binary: expected bin/<abi>/%s", app.Binary)
	}
	slices.SortFunc(abis, func(a, b string) int { return slices.Index(KnownABIs, a) - slices.Index(KnownABIs, b) })
	return abis, nil
}

// entryMode is the Unix mode an entry is stored (and installed) with:
// binaries are executable, everything else is not.
func entryMode(name string) uint32 {
	if strings.HasPrefix(name, "bin/") {
		return 0o100755
	}
	return 0o100644
}

// Pack builds a signed bundle from the regular files of src (app.json,
// bin/<abi>/<binary>, assets/…) and writes it to w. The output depends
// only on the files' names and contents and the key: entries are sorted,
// stored uncompressed with fixed timestamps and modes. Symlinks, special
// files and a META-INF directory in src are errors. Pack validates
// app.json and the layout as Verify does, so it never writes a bundle
// that Verify rejects.
func Pack(ctx context.Context, src fs.FS, key ed25519.PrivateKey, w io.Writer) (*Manifest, error) {
	if len(key) != ed25519.PrivateKeySize {
		return nil, errors.New("pack: not an ed25519 private key")
	}
	var names []string
	err := fs.WalkDir(src, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == "." {
			return nil
		}
		if d.IsDir() {
			if p == "META-INF" {
				return bundleErr(p, ErrBadName, "META-INF is written by pack")
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return bundleErr(p, ErrSpecial, "%s", d.Type())
		}
		if why := checkName(p); why != "" {
			return bundleErr(p, ErrBadName, "%s", why)
		}
		names = append(names, p)
		if len(names) > MaxFiles-2 {
			return bundleErr("", ErrTooManyFiles, "at most %d files besides META-INF", MaxFiles-2)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("pack: %w", err)
	}
	slices.Sort(names)

	// Pass 1: digests and CRCs.
	type srcFile struct {
		File
		crc uint32
	}
	files := make([]srcFile, 0, len(names))
	var total int64
	var appData []byte
	for _, n := range names {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("pack: %w", err)
		}
		sum, crc, size, data, err := digestFile(src, n, MaxBundleBytes-total, n == AppJSONName)
		if err != nil {
			return nil, fmt.Errorf("pack: %w", err)
		}
		total += size
		if n == AppJSONName {
			appData = data
		}
		files = append(files, srcFile{File{n, size, sum}, crc})
	}
	if appData == nil {
		return nil, fmt.Errorf("pack: %w", bundleErr(AppJSONName, ErrMissing, "the app's identity is required"))
	}
	app, err := ParseApp(appData)
	if err != nil {
		return nil, fmt.Errorf("pack: %w", &BundleError{Entry: AppJSONName, Reason: ErrBadApp, Cause: err, Detail: err.Error()})
	}
	abis, err := checkLayout(app, names)
	if err != nil {
		return nil, fmt.Errorf("pack: %w", err)
	}

	sm := signedManifest{Format: bundleFormat, Files: make([]File, len(files))}
	for i, f := range files {
		sm.Files[i] = f.File
	}
	manifestBytes, err := json.Marshal(sm)
	if err != nil {
		return nil, fmt.Errorf("pack: %w", err)
	}
	pub := key.Public().(ed25519.PublicKey)
	sigBytes, err := json.Marshal(signatureFile{
		Format:    bundleFormat,
		Algorithm: signatureAlgo,
		PublicKey: base64.StdEncoding.EncodeToString(pub),
		Signature: base64.StdEncoding.EncodeToString(ed25519.Sign(key, manifestBytes)),
	})
	if err != nil {
		return nil, fmt.Errorf("pack: %w", err)
	}
	if total+int64(len(manifestBytes)+len(sigBytes)) > MaxBundleBytes {
		return nil, fmt.Errorf("pack: %w", bundleErr("", ErrTooLarge, "files total over %d bytes", MaxBundleBytes))
	}

	// Pass 2: write entries in name order, META-INF included.
	type outEntry struct {
		name string
		size int64
		crc  uint32
		data []byte // META-INF only
	}
	out := make([]outEntry, 0, len(files)+2)
	for _, f := range files {
		out = append(out, outEntry{name: f.Name, size: f.Size, crc: f.crc})
	}
	out = append(out,
		outEntry{name: ManifestName, size: int64(len(manifestBytes)), crc: crc32.ChecksumIEEE(manifestBytes), data: manifestBytes},
		outEntry{name: SignatureName, size: int64(len(sigBytes)), crc: crc32.ChecksumIEEE(sigBytes), data: sigBytes},
	)
	slices.SortFunc(out, func(a, b outEntry) int { return strings.Compare(a.name, b.name) })

	cw := &countWriter{w: w}
	var cd []byte
	for _, e := range out {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("pack: %w", err)
		}
		ze := zipEntry{name: e.name, size: uint32(e.size), crc: e.crc, mode: entryMode(e.name), offset: uint32(cw.n)}
		if _, err := cw.Write(ze.local()); err != nil {
			return nil, fmt.Errorf("pack: %w", err)
		}
		if e.data != nil {
			if _, err := cw.Write(e.data); err != nil {
				return nil, fmt.Errorf("pack: %w", err)
			}
		} else if err := copyChecked(cw, src, e.name, e.size, e.crc); err != nil {
			return nil, fmt.Errorf("pack: %w", err)
		}
		cd = append(cd, ze.central()...)
	}
	cdOffset := cw.n
	if _, err := cw.Write(cd); err != nil {
		return nil, fmt.Errorf("pack: %w", err)
	}
	if _, err := cw.Write(endRecord(len(out), len(cd), uint32(cdOffset))); err != nil {
		return nil, fmt.Errorf("pack: %w", err)
	}
	msum := sha256.Sum256(manifestBytes)
	return &Manifest{
		App:           app,
		Files:         sm.Files,
		PublicKey:     pub,
		SigningDigest: SigningDigest(pub),
		ContentDigest: hex.EncodeToString(msum[:]),
		ABIs:          abis,
	}, nil
}

// digestFile hashes one source file, bounded by limit bytes; keep
// returns the content too (for app.json, which is small).
func digestFile(src fs.FS, name string, limit int64, keep bool) (sum string, crc uint32, size int64, data []byte, err error) {
	f, err := src.Open(name)
	if err != nil {
		return "", 0, 0, nil, err
	}
	defer f.Close()
	h := sha256.New()
	c := crc32.NewIEEE()
	var buf bytes.Buffer
	ws := []io.Writer{h, c}
	if keep {
		limit = min(limit, MaxAppJSONBytes)
		ws = append(ws, &buf)
	}
	n, err := io.Copy(io.MultiWriter(ws...), io.LimitReader(f, limit+1))
	if err != nil {
		return "", 0, 0, nil, err
	}
	if n > limit {
		if keep {
			return "", 0, 0, nil, &BundleError{Entry: name, Reason: ErrBadApp, Detail: fmt.Sprintf("larger than %d bytes", MaxAppJSONBytes)}
		}
		return "", 0, 0, nil, bundleErr(name, ErrTooLarge, "files total over %d bytes", MaxBundleBytes)
	}
	if keep {
		data = buf.Bytes()
	}
	return hex.EncodeToString(h.Sum(nil)), c.Sum32(), n, data, nil
}

// copyChecked copies a source file to w and fails if it is no longer the
// file that was hashed.
func copyChecked(w io.Writer, src fs.FS, name string, size int64, crc uint32) error {
	f, err := src.Open(name)
	if err != nil {
		return err
	}
	defer f.Close()
	c := crc32.NewIEEE()
	n, err := io.Copy(io.MultiWriter(w, c), io.LimitReader(f, size))
	if err != nil {
		return err
	}
	var one [1]byte
	if extra, _ := f.Read(one[:]); n != size || extra != 0 || c.Sum32() != crc {
		return bundleErr(name, ErrSourceChanged, "")
	}
	return nil
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// The canonical zip: every field of every header is fixed or derived
// from the entry, so a bundle's bytes are a function of its files and
// key, and any change to any byte is detectable.
const (
	zipVersion   = 20        // 2.0
	zipMadeBy    = 3<<8 | 20 // Unix, 2.0
	zipFlagUTF8  = 0x0800    // names are UTF-8
	zipDOSDate   = 1<<5 | 1  // 1980-01-01
	zipDOSTime   = 0         // 00:00:00
	localLen     = 30
	centralLen   = 46
	endLen       = 22
	sigLocal     = 0x04034b50
	sigCentral   = 0x02014b50
	sigEnd       = 0x06054b50
	maxZipOffset = 1<<32 - 1
)

type zipEntry struct {
	name   string
	size   uint32
	crc    uint32
	mode   uint32
	offset uint32
}

func (e zipEntry) local() []byte {
	b := make([]byte, 0, localLen+len(e.name))
	b = binary.LittleEndian.AppendUint32(b, sigLocal)
	b = binary.LittleEndian.AppendUint16(b, zipVersion)
	b = binary.LittleEndian.AppendUint16(b, zipFlagUTF8)
	b = binary.LittleEndian.AppendUint16(b, uint16(zip.Store))
	b = binary.LittleEndian.AppendUint16(b, zipDOSTime)
	b = binary.LittleEndian.AppendUint16(b, zipDOSDate)
	b = binary.LittleEndian.AppendUint32(b, e.crc)
	b = binary.LittleEndian.AppendUint32(b, e.size)
	b = binary.LittleEndian.AppendUint32(b, e.size)
	b = binary.LittleEndian.AppendUint16(b, uint16(len(e.name)))
	b = binary.LittleEndian.AppendUint16(b, 0) // extra
	return append(b, e.name...)
}

func (e zipEntry) central() []byte {
	b := make([]byte, 0, centralLen+len(e.name))
	b = binary.LittleEndian.AppendUint32(b, sigCentral)
	b = binary.LittleEndian.AppendUint16(b, zipMadeBy)
	b = binary.LittleEndian.AppendUint16(b, zipVersion)
	b = binary.LittleEndian.AppendUint16(b, zipFlagUTF8)
	b = binary.LittleEndian.AppendUint16(b, uint16(zip.Store))
	b = binary.LittleEndian.AppendUint16(b, zipDOSTime)
	b = binary.LittleEndian.AppendUint16(b, zipDOSDate)
	b = binary.LittleEndian.AppendUint32(b, e.crc)
	b = binary.LittleEndian.AppendUint32(b, e.size)
	b = binary.LittleEndian.AppendUint32(b, e.size)
	b = binary.LittleEndian.AppendUint16(b, uint16(len(e.name)))
	b = binary.LittleEndian.AppendUint16(b, 0) // extra
	b = binary.LittleEndian.AppendUint16(b, 0) // comment
	b = binary.LittleEndian.AppendUint16(b, 0) // disk
	b = binary.LittleEndian.AppendUint16(b, 0) // internal attributes
	b = binary.LittleEndian.AppendUint32(b, e.mode<<16)
	b = binary.LittleEndian.AppendUint32(b, e.offset)
	return append(b, e.name...)
}

func endRecord(n, cdSize int, cdOffset uint32) []byte {
	b := make([]byte, 0, endLen)
	b = binary.LittleEndian.AppendUint32(b, sigEnd)
	b = binary.LittleEndian.AppendUint16(b, 0) // this disk
	b = binary.LittleEndian.AppendUint16(b, 0) // disk with the directory
	b = binary.LittleEndian.AppendUint16(b, uint16(n))
	b = binary.LittleEndian.AppendUint16(b, uint16(n))
	b = binary.LittleEndian.AppendUint32(b, uint32(cdSize))
	b = binary.LittleEndian.AppendUint32(b, cdOffset)
	return binary.LittleEndian.AppendUint16(b, 0) // comment
}

// Bundle is a verified bundle open for reading its files.
type Bundle struct {
	Manifest *Manifest
	files    map[string]*zip.File
}

// Verify checks a bundle and returns its manifest. It rejects, with a
// *BundleError naming the entry: a bundle over MaxBundleBytes or
// MaxFiles; absolute, "..", empty-segment, backslash or control-character
// names; duplicate names; symlinks, directories and other non-regular
// entries; compressed entries; a missing or wrong signature; entries
// missing from, extra to or changed since the signed manifest; an
// oversized or malformed app.json; files outside app.json, bin/<abi>/<binary>
// and assets/; and any byte of zip structure that differs from what Pack
// writes.
func Verify(r io.ReaderAt, size int64) (*Manifest, error) {
	b, err := OpenBundle(r, size)
	if err != nil {
		return nil, err
	}
	return b.Manifest, nil
}

// VerifyBytes is Verify for a bundle in memory.
func VerifyBytes(data []byte) (*Manifest, error) {
	return Verify(bytes.NewReader(data), int64(len(data)))
}

// OpenBundle verifies a bundle as Verify does and keeps it open for
// reading its files. r must not change while the Bundle is used.
func OpenBundle(r io.ReaderAt, size int64) (*Bundle, error) {
	if size > MaxBundleBytes {
		return nil, bundleErr("", ErrTooLarge, "%d bytes, the limit is %d", size, MaxBundleBytes)
	}
	if size < endLen {
		return nil, bundleErr("", ErrNotBundle, "%d bytes", size)
	}
	if err := precheckCount(r, size); err != nil {
		return nil, err
	}
	zr, err := zip.NewReader(r, size)
	if err != nil {
		return nil, &BundleError{Reason: ErrNotBundle, Detail: err.Error(), Cause: err}
	}
	if len(zr.File) > MaxFiles {
		return nil, bundleErr("", ErrTooManyFiles, "%d entries, the limit is %d", len(zr.File), MaxFiles)
	}

	files := make(map[string]*zip.File, len(zr.File))
	var total uint64
	for _, f := range zr.File {
		n := f.Name
		if strings.HasSuffix(n, "/") || f.Mode().IsDir() {
			return nil, bundleErr(n, ErrSpecial, "directory entry")
		}
		if why := checkName(n); why != "" {
			return nil, bundleErr(n, ErrBadName, "%s", why)
		}
		if _, dup := files[n]; dup {
			return nil, bundleErr(n, ErrDuplicate, "")
		}
		files[n] = f
		if m := f.Mode(); !m.IsRegular() {
			return nil, bundleErr(n, ErrSpecial, "%s", m.Type())
		}
		if f.Method != zip.Store {
			return nil, bundleErr(n, ErrCompressed, "method %d", f.Method)
		}
		total += f.UncompressedSize64
		if f.UncompressedSize64 > MaxBundleBytes || total > MaxBundleBytes {
			return nil, bundleErr(n, ErrTooLarge, "entries total over %d bytes", MaxBundleBytes)
		}
		if f.CompressedSize64 != f.UncompressedSize64 {
			return nil, bundleErr(n, ErrNonCanonical, "stored entry with two sizes")
		}
	}

	// The signature, then the signed manifest.
	sigF, manF := files[SignatureName], files[ManifestName]
	if sigF == nil || manF == nil {
		return nil, bundleErr("", ErrUnsigned, "%s and %s are required (agentosd app pack signs)", ManifestName, SignatureName)
	}
	sigBytes, err := readEntry(sigF, maxSignatureBytes)
	if err != nil {
		return nil, err
	}
	manifestBytes, err := readEntry(manF, maxManifestBytes)
	if err != nil {
		return nil, err
	}
	pub, err := checkSignature(sigBytes, manifestBytes)
	if err != nil {
		return nil, err
	}
	sm, err := parseSignedManifest(manifestBytes)
	if err != nil {
		return nil, err
	}

	// Same set of names.
	signed := make(map[string]File, len(sm.Files))
	for _, f := range sm.Files {
		signed[f.Name] = f
		if files[f.Name] == nil {
			return nil, bundleErr(f.Name, ErrMissing, "")
		}
	}
	var names []string
	for _, f := range zr.File {
		if f.Name == SignatureName || f.Name == ManifestName {
			continue
		}
		if _, ok := signed[f.Name]; !ok {
			return nil, bundleErr(f.Name, ErrExtra, "")
		}
		names = append(names, f.Name)
	}
	slices.Sort(names)

	// Every file's content.
	crcs := map[string]uint32{
		SignatureName: crc32.ChecksumIEEE(sigBytes),
		ManifestName:  crc32.ChecksumIEEE(manifestBytes),
	}
	var appData []byte
	for _, sf := range sm.Files {
		if sf.Name == AppJSONName && sf.Size > MaxAppJSONBytes {
			return nil, bundleErr(AppJSONName, ErrBadApp, "larger than %d bytes", MaxAppJSONBytes)
		}
		crc, data, err := checkEntry(files[sf.Name], sf, sf.Name == AppJSONName)
		if err != nil {
			return nil, err
		}
		crcs[sf.Name] = crc
		if sf.Name == AppJSONName {
			appData = data
		}
	}
	if appData == nil {
		return nil, bundleErr(AppJSONName, ErrMissing, "the app's identity is required")
	}
	app, err := ParseApp(appData)
	if err != nil {
		return nil, &BundleError{Entry: AppJSONName, Reason: ErrBadApp, Detail: err.Error(), Cause: err}
	}
	abis, err := checkLayout(app, names)
	if err != nil {
		return nil, err
	}
	if err := checkCanonical(r, size, zr.File, crcs); err != nil {
		return nil, err
	}
	msum := sha256.Sum256(manifestBytes)
	return &Bundle{
		Manifest: &Manifest{
			App:           app,
			Files:         sm.Files,
			PublicKey:     pub,
			SigningDigest: SigningDigest(pub),
			ContentDigest: hex.EncodeToString(msum[:]),
			ABIs:          abis,
		},
		files: files,
	}, nil
}

// Open opens a signed file of the bundle (not META-INF).
func (b *Bundle) Open(name string) (io.ReadCloser, error) {
	if name == ManifestName || name == SignatureName {
		return nil, fmt.Errorf("bundle: %s: %w", name, fs.ErrNotExist)
	}
	f := b.files[name]
	if f == nil {
		return nil, fmt.Errorf("bundle: %s: %w", name, fs.ErrNotExist)
	}
	return f.Open()
}

// precheckCount reads the end record's entry count before archive/zip
// allocates the whole directory.
func precheckCount(r io.ReaderAt, size int64) error {
	n := min(size, endLen+0xffff)
	tail := make([]byte, n)
	if _, err := r.ReadAt(tail, size-n); err != nil && !errors.Is(err, io.EOF) {
		return &BundleError{Reason: ErrNotBundle, Detail: err.Error(), Cause: err}
	}
	for i := len(tail) - endLen; i >= 0; i-- {
		if binary.LittleEndian.Uint32(tail[i:]) == sigEnd {
			count := binary.LittleEndian.Uint16(tail[i+10:])
			if int(count) > MaxFiles {
				return bundleErr("", ErrTooManyFiles, "%d entries, the limit is %d", count, MaxFiles)
			}
			return nil
		}
	}
	return bundleErr("", ErrNotBundle, "no end of central directory")
}

func readEntry(f *zip.File, limit int64) ([]byte, error) {
	if f.UncompressedSize64 > uint64(limit) {
		return nil, bundleErr(f.Name, ErrTooLarge, "over %d bytes", limit)
	}
	rc, err := f.Open()
	if err != nil {
		return nil, bundleErr(f.Name, ErrChanged, "%v", err)
	}
	defer rc.Close()
	b, err := io.ReadAll(io.LimitReader(rc, limit+1))
	if err != nil {
		return nil, bundleErr(f.Name, ErrChanged, "%v", err)
	}
	if int64(len(b)) > limit || uint64(len(b)) != f.UncompressedSize64 {
		return nil, bundleErr(f.Name, ErrChanged, "size differs from its header")
	}
	return b, nil
}

func checkSignature(sigBytes, manifestBytes []byte) (ed25519.PublicKey, error) {
	var sf signatureFile
	dec := json.NewDecoder(bytes.NewReader(sigBytes))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&sf); err != nil || dec.More() {
		return nil, bundleErr(SignatureName, ErrBadSignature, "malformed")
	}
	// The signature file is not signed itself: accept only the one
	// encoding Pack writes, so no byte of it can change unnoticed.
	if canon, _ := json.Marshal(sf); !bytes.Equal(canon, sigBytes) {
		return nil, bundleErr(SignatureName, ErrBadSignature, "not in canonical form")
	}
	if sf.Format != bundleFormat || sf.Algorithm != signatureAlgo {
		return nil, bundleErr(SignatureName, ErrBadSignature, "format %d, algorithm %q: want %d, %q", sf.Format, clipText(sf.Algorithm), bundleFormat, signatureAlgo)
	}
	pub, err1 := base64.StdEncoding.DecodeString(sf.PublicKey)
	sig, err2 := base64.StdEncoding.DecodeString(sf.Signature)
	if err1 != nil || err2 != nil || len(pub) != ed25519.PublicKeySize || len(sig) != ed25519.SignatureSize {
		return nil, bundleErr(SignatureName, ErrBadSignature, "malformed key or signature")
	}
	if !ed25519.Verify(pub, manifestBytes, sig) {
		return nil, bundleErr(ManifestName, ErrBadSignature, "")
	}
	return ed25519.PublicKey(pub), nil
}

func parseSignedManifest(b []byte) (*signedManifest, error) {
	var sm signedManifest
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&sm); err != nil || dec.More() {
		return nil, bundleErr(ManifestName, ErrBadManifest, "not the manifest JSON")
	}
	if sm.Format != bundleFormat {
		return nil, bundleErr(ManifestName, ErrBadManifest, "format %d, want %d", sm.Format, bundleFormat)
	}
	if len(sm.Files) > MaxFiles-2 {
		return nil, bundleErr(ManifestName, ErrTooManyFiles, "")
	}
	for i, f := range sm.Files {
		if why := checkName(f.Name); why != "" || strings.HasPrefix(f.Name, "META-INF/") {
			return nil, bundleErr(ManifestName, ErrBadManifest, "file %d: bad name", i)
		}
		if i > 0 && sm.Files[i-1].Name >= f.Name {
			return nil, bundleErr(ManifestName, ErrBadManifest, "files not sorted or repeated at %q", f.Name)
		}
		if f.Size < 0 || len(f.SHA256) != 64 || strings.ToLower(f.SHA256) != f.SHA256 {
			return nil, bundleErr(ManifestName, ErrBadManifest, "file %q: bad size or digest", f.Name)
		}
		if _, err := hex.DecodeString(f.SHA256); err != nil {
			return nil, bundleErr(ManifestName, ErrBadManifest, "file %q: bad digest", f.Name)
		}
	}
	return &sm, nil
}

// checkEntry reads one entry and compares it with its signed digest; it
// returns the CRC-32 of what it read (and the bytes when keep is set).
func checkEntry(f *zip.File, sf File, keep bool) (uint32, []byte, error) {
	if f.UncompressedSize64 != uint64(sf.Size) {
		return 0, nil, bundleErr(sf.Name, ErrChanged, "size %d, signed %d", f.UncompressedSize64, sf.Size)
	}
	rc, err := f.Open()
	if err != nil {
		return 0, nil, bundleErr(sf.Name, ErrChanged, "%v", err)
	}
	defer rc.Close()
	h := sha256.New()
	c := crc32.NewIEEE()
	var buf bytes.Buffer
	ws := []io.Writer{h, c}
	if keep {
		ws = append(ws, &buf)
	}
	n, err := io.Copy(io.MultiWriter(ws...), io.LimitReader(rc, sf.Size+1))
	if err != nil {
		return 0, nil, bundleErr(sf.Name, ErrChanged, "%v", err)
	}
	if n != sf.Size || hex.EncodeToString(h.Sum(nil)) != sf.SHA256 {
		return 0, nil, bundleErr(sf.Name, ErrChanged, "")
	}
	return c.Sum32(), buf.Bytes(), nil
}

// checkCanonical compares every header byte with what Pack writes for
// the same entries. Content bytes were checked against their digests, so
// afterwards every byte of the bundle is accounted for.
func checkCanonical(r io.ReaderAt, size int64, zf []*zip.File, crcs map[string]uint32) error {
	if !slices.IsSortedFunc(zf, func(a, b *zip.File) int { return strings.Compare(a.Name, b.Name) }) {
		return bundleErr("", ErrNonCanonical, "entries not in name order")
	}
	var off int64
	var cd []byte
	for _, f := range zf {
		e := zipEntry{name: f.Name, size: uint32(f.UncompressedSize64), crc: crcs[f.Name], mode: entryMode(f.Name), offset: uint32(off)}
		if off > maxZipOffset {
			return bundleErr(f.Name, ErrNonCanonical, "offset beyond 4 GiB")
		}
		want := e.local()
		if err := sameBytes(r, off, want); err != nil {
			return bundleErr(f.Name, ErrNonCanonical, "local header: %v", err)
		}
		off += int64(len(want)) + int64(f.UncompressedSize64)
		cd = append(cd, e.central()...)
	}
	if err := sameBytes(r, off, cd); err != nil {
		return bundleErr("", ErrNonCanonical, "central directory: %v", err)
	}
	end := endRecord(len(zf), len(cd), uint32(off))
	if err := sameBytes(r, off+int64(len(cd)), end); err != nil {
		return bundleErr("", ErrNonCanonical, "end record: %v", err)
	}
	if want := off + int64(len(cd)+len(end)); size != want {
		return bundleErr("", ErrNonCanonical, "%d bytes, want %d", size, want)
	}
	return nil
}

func sameBytes(r io.ReaderAt, off int64, want []byte) error {
	got := make([]byte, len(want))
	if _, err := r.ReadAt(got, off); err != nil {
		return fmt.Errorf("at offset %d: %w", off, err)
	}
	if i := firstDiff(got, want); i >= 0 {
		return fmt.Errorf("byte at offset %d differs", off+int64(i))
	}
	return nil
}

func firstDiff(a, b []byte) int {
	for i := range a {
		if a[i] != b[i] {
			return i
		}
	}
	return -1
}
