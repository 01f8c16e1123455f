package devices_test

import (
	"errors"
	"fmt"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentoslab/agentlab/devices"
)

func TestErrNotExistIsFSErrNotExist(t *testing.T) {
	err := fmt.Errorf("stat /x: %w", devices.ErrNotExist)
	if !errors.Is(err, devices.ErrNotExist) || !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("%v must match both devices.ErrNotExist and fs.ErrNotExist", err)
	}
	if errors.Is(fmt.Errorf("x: %w", devices.ErrDeviceGone), fs.ErrNotExist) {
		t.Fatal("ErrDeviceGone matches fs.ErrNotExist")
	}
}

// TestPackageDocs: every package of the devices layer that this test
// owns (devices itself, adb, pool, emulator and everything under them)
// has a package comment.
func TestPackageDocs(t *testing.T) {
	dirs := []string{"."}
	for _, root := range []string{"adb", "pool", "emulator"} {
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && d.Name() == "testdata" {
				return filepath.SkipDir
			}
			if d.IsDir() {
				dirs = append(dirs, path)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, dir := range dirs {
		pkgs, err := parser.ParseDir(token.NewFileSet(), dir, func(fi fs.FileInfo) bool {
			return !strings.HasSuffix(fi.Name(), "_test.go")
		}, parser.PackageClauseOnly|parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		for name, pkg := range pkgs {
			want := "Package " + name + " "
			if name == "main" {
				want = "Command "
			}
			documented := false
			for _, f := range pkg.Files {
				if f.Doc != nil && strings.HasPrefix(f.Doc.Text(), want) {
					documented = true
				}
			}
			if !documented {
				t.Errorf("%s: package %s has no doc comment starting %q", dir, name, want)
			}
		}
	}
}
