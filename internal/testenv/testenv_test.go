package testenv

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestNeedFindsOnPATH: the helpers return the binary PATH names and skip
// (never fail) when it is missing.
func TestNeedFindsOnPATH(t *testing.T) {
	dir := t.TempDir()
	for _, bin := range []string{"adb", "node"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, bin), []byte("#!/bin/sh\n"), 0o755))
	}
	t.Setenv("PATH", dir)

	var adb, node, npm string
	ran := t.Run("adb", func(t *testing.T) { adb = NeedADB(t) })
	assert.True(t, ran)
	assert.Equal(t, filepath.Join(dir, "adb"), adb)

	var reachedNPM bool
	t.Run("node without npm", func(t *testing.T) {
		node, npm = NeedNode(t)
		reachedNPM = true
	})
	assert.False(t, reachedNPM, "NeedNode must skip when npm is missing")
	assert.Empty(t, npm)

	require.NoError(t, os.WriteFile(filepath.Join(dir, "npm"), []byte("#!/bin/sh\n"), 0o755))
	t.Run("node and npm", func(t *testing.T) { node, npm = NeedNode(t) })
	assert.Equal(t, filepath.Join(dir, "node"), node)
	assert.Equal(t, filepath.Join(dir, "npm"), npm)
}

func TestNeedSkipsWhenMissing(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	for name, fn := range map[string]func(testing.TB){
		"adb":             func(t testing.TB) { NeedADB(t) },
		"node":            func(t testing.TB) { NeedNode(t) },
		"virtual devices": NeedVirtualDevices,
	} {
		var sub *testing.T
		ok := t.Run(name, func(t *testing.T) {
			sub = t
			fn(t)
			t.Error("not skipped")
		})
		assert.True(t, ok, name)
		assert.True(t, sub.Skipped(), name)
	}
}

func TestNeedRootMatchesEUID(t *testing.T) {
	var sub *testing.T
	t.Run("root", func(t *testing.T) { sub = t; NeedRoot(t) })
	assert.Equal(t, os.Geteuid() != 0, sub.Skipped())
}
