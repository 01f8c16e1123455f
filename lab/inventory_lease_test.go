//go:build linux

package lab

import (
	"context"
	"log/slog"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentoslab/agentlab/devices/virtual"
)

// A virtual device another live run leases is unavailable to this run: it
// is neither adopted nor started (the bug: two runs sharing a state
// folder provisioned and ran scenarios on each other's devices). The
// run's own leases end with its Inventory.
func TestRunSkipsLeasedVirtualDevices(t *testing.T) {
	cfg := labYAML(t, "devices: {virtual: {count: 1}}\n")
	dir := cfg.VirtualStateDir()
	other, err := virtual.TakeLease(dir, "vdev-1")
	require.NoError(t, err)

	inv, err := openInventory(context.Background(), cfg, &inventoryOptions{start: true, logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	require.Len(t, inv.Devices, 1)
	d := inv.Devices[0]
	assert.Contains(t, d.State, "unavailable")
	assert.Contains(t, d.State, "leased by another process")
	assert.False(t, d.Usable())
	infos, _ := virtual.List(dir)
	assert.Empty(t, infos, "no virtual device was started")
	require.NoError(t, inv.Close())

	// Once the other run is gone, a run leases the device and holds it
	// until its Inventory closes.
	require.NoError(t, other.Release())
	inv = &Inventory{}
	l, err := virtual.TakeLease(dir, "vdev-1")
	require.NoError(t, err)
	inv.leases = append(inv.leases, l)
	_, err = virtual.TakeLease(dir, "vdev-1")
	require.ErrorIs(t, err, virtual.ErrLeased)
	require.NoError(t, inv.Close())
	again, err := virtual.TakeLease(dir, "vdev-1")
	require.NoError(t, err, "Close released the lease")
	require.NoError(t, again.Release())
	_, err = os.Stat(dir)
	require.NoError(t, err)
}
