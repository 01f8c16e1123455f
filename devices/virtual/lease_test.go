//go:build unix

package virtual

import (
	"bufio"
	"os"
	"os/exec"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A device leased by one holder is unavailable to a second until the
// first releases it. flock conflicts between separate opens even within
// one process, so this stands for two lab runs.
func TestLeaseIsExclusive(t *testing.T) {
	dir := t.TempDir()
	l, err := TakeLease(dir, "vdev-1")
	require.NoError(t, err)
	_, err = TakeLease(dir, "vdev-1")
	require.ErrorIs(t, err, ErrLeased)
	assert.Contains(t, err.Error(), "pid "+strconv.Itoa(os.Getpid()))
	other, err := TakeLease(dir, "vdev-2")
	require.NoError(t, err, "another device's lease is its own")
	require.NoError(t, other.Release())
	require.NoError(t, l.Release())
	require.NoError(t, l.Release(), "twice is harmless")
	again, err := TakeLease(dir, "vdev-1")
	require.NoError(t, err)
	require.NoError(t, again.Release())
	_, err = TakeLease(dir, "../x")
	require.Error(t, err)
}

// The lease of a process that dies is free at once: the kernel drops its
// flock, so a crashed run leaves no stale lease.
func TestLeaseEndsWithItsProcess(t *testing.T) {
	if dir := os.Getenv("VIRTUAL_LEASE_HOLDER"); dir != "" {
		_, err := TakeLease(dir, "vdev-1")
		if err != nil {
			os.Exit(3)
		}
		os.Stdout.WriteString("held\n")
		select {} // until killed
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestLeaseEndsWithItsProcess$")
	cmd.Env = append(os.Environ(), "VIRTUAL_LEASE_HOLDER="+dir)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	line, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "held\n", line)

	_, err = TakeLease(dir, "vdev-1")
	require.ErrorIs(t, err, ErrLeased, "a live process's lease")
	assert.Contains(t, err.Error(), "pid "+strconv.Itoa(cmd.Process.Pid))

	require.NoError(t, cmd.Process.Kill())
	_ = cmd.Wait()
	l, err := TakeLease(dir, "vdev-1")
	require.NoError(t, err, "a dead process's lease is free")
	require.NoError(t, l.Release())
}
