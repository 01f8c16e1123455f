// Package bundlecli is `agentosd app keygen|pack|sign|verify`: the
// command line the lab and app authors use to make and check signed app
// bundles (runtime/apps).
package bundlecli

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"testing/fstest"

	"github.com/agentoslab/agentlab/runtime/apps"
)

// Exit codes.
const (
	ExitOK     = 0
	ExitFailed = 1
	ExitUsage  = 2
)

const usage = `usage:
  agentosd app keygen --out KEY                      new ed25519 signing key (PEM, mode 0600)
  agentosd app pack --dir DIR --key KEY --out FILE   sign DIR (app.json, bin/<abi>/<binary>, assets/) into a bundle
  agentosd app sign --key KEY --out FILE BUNDLE      re-sign a verified bundle's files with another key
  agentosd app verify [--json] BUNDLE                check a bundle and print what it holds`

// Main runs `agentosd app <verb>` (args after "app") and returns the exit
// code. (`agentosd ctl app …` talks to a running runtime instead.)
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, usage)
		return ExitUsage
	}
	var err error
	switch args[0] {
	case "-h", "-help", "--help", "help":
		fmt.Fprintln(stdout, usage)
		return ExitOK
	case "keygen":
		err = keygen(args[1:], stdout, stderr)
	case "pack":
		err = pack(ctx, args[1:], stdout, stderr)
	case "sign":
		err = sign(ctx, args[1:], stdout, stderr)
	case "verify":
		err = verify(args[1:], stdout, stderr)
	default:
		fmt.Fprintf(stderr, "agentosd app: unknown command %q\n%s\n", args[0], usage)
		return ExitUsage
	}
	var ue usageError
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "agentosd app %s: %s\n%s\n", args[0], ue, usage)
		return ExitUsage
	default:
		fmt.Fprintf(stderr, "agentosd app %s: %v\n", args[0], err)
		return ExitFailed
	}
}

type usageError string

func (e usageError) Error() string { return string(e) }

func flags(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return fs
}

func keygen(args []string, stdout, stderr io.Writer) error {
	fs := flags("keygen")
	out := fs.String("out", "", "key file to create")
	if err := fs.Parse(args); err != nil {
		return usageError(err.Error())
	}
	if *out == "" || fs.NArg() > 0 {
		return usageError("--out KEY is required")
	}
	key, err := apps.GenerateKey()
	if err != nil {
		return err
	}
	if err := apps.WriteKeyFile(*out, key); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "signing digest %s\n", apps.SigningDigest(key.Public().(ed25519.PublicKey)))
	return nil
}

func pack(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flags("pack")
	dir := fs.String("dir", "", "directory with app.json, bin/ and assets/")
	keyPath := fs.String("key", "", "signing key")
	out := fs.String("out", "", "bundle to write")
	if err := fs.Parse(args); err != nil {
		return usageError(err.Error())
	}
	if *dir == "" || *keyPath == "" || *out == "" || fs.NArg() > 0 {
		return usageError("--dir, --key and --out are required")
	}
	key, err := apps.ReadKeyFile(*keyPath)
	if err != nil {
		return err
	}
	return writeBundle(ctx, os.DirFS(*dir), key, *out, stdout)
}

func sign(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flags("sign")
	keyPath := fs.String("key", "", "signing key")
	out := fs.String("out", "", "bundle to write")
	if err := fs.Parse(args); err != nil {
		return usageError(err.Error())
	}
	if *keyPath == "" || *out == "" || fs.NArg() != 1 {
		return usageError("--key, --out and one bundle are required")
	}
	key, err := apps.ReadKeyFile(*keyPath)
	if err != nil {
		return err
	}
	data, err := os.ReadFile(fs.Arg(0))
	if err != nil {
		return err
	}
	b, err := apps.OpenBundle(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return err
	}
	files := fstest.MapFS{}
	for _, f := range b.Manifest.Files {
		rc, err := b.Open(f.Name)
		if err != nil {
			return err
		}
		c, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			return err
		}
		files[f.Name] = &fstest.MapFile{Data: c, Mode: 0o644}
	}
	return writeBundle(ctx, files, key, *out, stdout)
}

// writeBundle packs src into out through a temporary file and a rename.
func writeBundle(ctx context.Context, src fs.FS, key ed25519.PrivateKey, out string, stdout io.Writer) error {
	tmp, err := os.CreateTemp(filepath.Dir(out), ".bundle-*.agentapp")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	h := sha256.New()
	m, err := apps.Pack(ctx, src, key, io.MultiWriter(tmp, h))
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), 0o644)
	}
	if err == nil {
		err = os.Rename(tmp.Name(), out)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s %d signed by %s\n%s  %s\n", m.App.Package, m.App.VersionCode, m.SigningDigest, hex.EncodeToString(h.Sum(nil)), out)
	return nil
}

// Summary is `app verify --json`'s output.
type Summary struct {
	Package       string         `json:"package"`
	Label         string         `json:"label"`
	VersionCode   int64          `json:"versionCode"`
	VersionName   string         `json:"versionName,omitempty"`
	SigningDigest string         `json:"signingDigest"`
	ContentDigest string         `json:"contentDigest"`
	ABIs          []string       `json:"abis"`
	Services      []apps.Service `json:"services"`
	Caller        bool           `json:"caller"`
	SharedUserID  string         `json:"sharedUserId,omitempty"`
	Commands      []string       `json:"commands"`
	Files         int            `json:"files"`
}

func verify(args []string, stdout, stderr io.Writer) error {
	fs := flags("verify")
	asJSON := fs.Bool("json", false, "print JSON")
	if err := fs.Parse(args); err != nil {
		return usageError(err.Error())
	}
	if fs.NArg() != 1 {
		return usageError("one bundle is required")
	}
	f, err := os.Open(fs.Arg(0))
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	m, err := apps.Verify(f, fi.Size())
	if err != nil {
		return err
	}
	s := Summary{Package: m.App.Package, Label: m.App.Label, VersionCode: m.App.VersionCode, VersionName: m.App.VersionName,
		SigningDigest: m.SigningDigest, ContentDigest: m.ContentDigest, ABIs: m.ABIs, Services: m.App.Services,
		Caller: m.App.Caller, SharedUserID: m.App.SharedUserID, Commands: m.App.Commands, Files: len(m.Files)}
	if s.Services == nil {
		s.Services = []apps.Service{}
	}
	if s.Commands == nil {
		s.Commands = []string{}
	}
	if *asJSON {
		b, _ := json.Marshal(s)
		fmt.Fprintf(stdout, "%s\n", b)
		return nil
	}
	fmt.Fprintf(stdout, "ok: %s %q versionCode %d (%s)\nsigner %s\nabis %v, %d files, caller %v\n",
		s.Package, s.Label, s.VersionCode, s.VersionName, s.SigningDigest, s.ABIs, s.Files, s.Caller)
	for _, sv := range s.Services {
		fmt.Fprintf(stdout, "service %s (%s) server %s\n", sv.Name, sv.Kind, sv.Server)
	}
	return nil
}
