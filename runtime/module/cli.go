package module

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// Main runs `agentosd module pack --abi ABI --agentosd PATH --out FILE
// [--version V --version-code N …]` and returns the exit code: 0 ok,
// 1 failed, 2 usage. The zip is written to a temporary file next to FILE
// and renamed, so FILE is either the old or the complete new module.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] != "pack" {
		fmt.Fprintln(stderr, "usage: agentosd module pack --abi arm64-v8a|x86_64 --agentosd PATH --out FILE.zip [--version V] [--version-code N] [flags]")
		return 2
	}
	fs := flag.NewFlagSet("module pack", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o Options
	out := fs.String("out", "", "module zip to write")
	fs.StringVar(&o.ABI, "abi", "", "arm64-v8a or x86_64")
	fs.StringVar(&o.AgentosdPath, "agentosd", "", "agentosd binary built for the ABI")
	fs.StringVar(&o.Version, "version", "0.1.0", "module version shown by the root manager")
	fs.Int64Var(&o.VersionCode, "version-code", 1, "module versionCode")
	fs.IntVar(&o.MinAPI, "min-api", DefaultMinAPI, "lowest supported Android API level")
	fs.IntVar(&o.MaxAPI, "max-api", DefaultMaxAPI, "highest supported Android API level")
	fs.IntVar(&o.MagiskMin, "magisk-min", DefaultMagiskMin, "oldest Magisk versionCode accepted")
	fs.IntVar(&o.MinFreeMB, "min-free-mb", DefaultMinFreeMB, "free space /data must have")
	fs.StringVar(&o.Root, "root", DefaultRoot, "supervisor data root on the device")
	fs.IntVar(&o.RuntimeUID, "runtime-uid", 0, "runtime uid passed to supervise (0: its default)")
	fs.StringVar(&o.SocketPrefix, "socket-prefix", "", "socket prefix passed to supervise")
	fs.StringVar(&o.Name, "name", DefaultName, "module name")
	fs.StringVar(&o.Author, "author", DefaultAuthor, "module author")
	fs.StringVar(&o.Description, "description", DefaultDescription, "module description")
	fs.StringVar(&o.MatrixVersion, "matrix-version", DefaultMatrixVersion, "support matrix version")
	fs.IntVar(&o.KernelSUMin, "kernelsu-min", 0, "oldest KernelSU versionCode accepted")
	fs.Func("verified-fingerprint", "ro.build.fingerprint the module was qualified on (repeatable)", func(v string) error {
		o.VerifiedFingerprints = append(o.VerifiedFingerprints, v)
		return nil
	})
	fs.Func("conflicting-module", "module id that must not be installed (repeatable)", func(v string) error {
		o.ConflictingModules = append(o.ConflictingModules, v)
		return nil
	})
	fs.Func("bundle", "app bundle to carry and install at boot (repeatable)", func(p string) error {
		o.Bundles = append(o.Bundles, p)
		return nil
	})
	if err := fs.Parse(args[1:]); err != nil {
		return 2
	}
	if *out == "" || fs.NArg() > 0 {
		fmt.Fprintln(stderr, "agentosd module pack: --out FILE is required and no other arguments are taken")
		return 2
	}
	tmp, err := os.CreateTemp(filepath.Dir(*out), ".module-*.zip")
	if err != nil {
		fmt.Fprintf(stderr, "agentosd module pack: %v\n", err)
		return 1
	}
	defer os.Remove(tmp.Name())
	h := sha256.New()
	err = Pack(ctx, o, io.MultiWriter(tmp, h))
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), 0o644)
	}
	if err == nil {
		err = os.Rename(tmp.Name(), *out)
	}
	if err != nil {
		fmt.Fprintf(stderr, "agentosd module pack: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "%s  %s\n", hex.EncodeToString(h.Sum(nil)), *out)
	return 0
}
