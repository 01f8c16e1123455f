package module

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMainPack(t *testing.T) {
	t.Parallel()
	bin := fakeELF(t, emX8664)
	dir := t.TempDir()
	var outs [][]byte
	for i, name := range []string{"a.zip", "b.zip"} {
		out := filepath.Join(dir, name)
		var stdout, stderr bytes.Buffer
		code := Main(context.Background(), []string{"pack", "--abi", "x86_64", "--agentosd", bin, "--out", out, "--version", "1.2.3", "--version-code", "12"}, &stdout, &stderr)
		if code != 0 {
			t.Fatalf("run %d: %d %s", i, code, stderr.String())
		}
		b, _ := os.ReadFile(out)
		sum := sha256.Sum256(b)
		if stdout.String() != hex.EncodeToString(sum[:])+"  "+out+"\n" {
			t.Fatalf("stdout %q", stdout.String())
		}
		outs = append(outs, b)
	}
	if !bytes.Equal(outs[0], outs[1]) {
		t.Fatal("two CLI packs differ")
	}
	var stderr bytes.Buffer
	if code := Main(context.Background(), []string{"pack", "--abi", "arm64-v8a", "--agentosd", bin, "--out", filepath.Join(dir, "c.zip")}, &bytes.Buffer{}, &stderr); code != 1 || !strings.Contains(stderr.String(), "not arm64-v8a") {
		t.Fatalf("wrong ABI: %d %s", code, stderr.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "c.zip")); !os.IsNotExist(err) {
		t.Fatal("failed pack left its output")
	}
	mout := filepath.Join(dir, "m.zip")
	if code := Main(context.Background(), []string{"pack", "--abi", "x86_64", "--agentosd", bin, "--out", mout, "--kernelsu-min", "11000",
		"--verified-fingerprint", "a/b:1/c", "--verified-fingerprint", "d/e:2/f", "--conflicting-module", "zygisk_x"}, &bytes.Buffer{}, &stderr); code != 0 {
		t.Fatalf("matrix flags: %d %s", code, stderr.String())
	}
	zr, err := zip.OpenReader(mout)
	require.NoError(t, err)
	defer zr.Close()
	f, err := zr.Open("support-matrix.yaml")
	require.NoError(t, err)
	matrix, _ := io.ReadAll(f)
	assert.Contains(t, string(matrix), "kernelsu_min: 11000\nmin_free_mb: 300\nverified_fingerprints:\n  - a/b:1/c\n  - d/e:2/f\nconflicting_modules:\n  - zygisk_x\n")
	if code := Main(context.Background(), []string{"unpack"}, &bytes.Buffer{}, &bytes.Buffer{}); code != 2 {
		t.Fatalf("usage: %d", code)
	}
}
