package emulator

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
)

// Reap removes every container (running or not) labelled with runID.
// It returns how many it removed.
func Reap(ctx context.Context, runID string) (int, error) {
	if runID == "" {
		return 0, errors.New("reap: empty run id")
	}
	return reap(ctx, LabelRun+"="+runID, func(map[string]string) bool { return true })
}

// ReapOrphans removes containers this lab started from this host whose
// owning process is gone (a run that died without cleaning up). It
// returns how many it removed.
func ReapOrphans(ctx context.Context) (int, error) {
	host, _ := os.Hostname()
	return reap(ctx, LabelOwner, func(labels map[string]string) bool {
		return orphaned(labels[LabelOwner], host)
	})
}

// orphaned reports whether an owner label "HOST/PID/START" names a process
// on this host that no longer exists (or whose pid was reused).
func orphaned(owner, host string) bool {
	f := strings.Split(owner, "/")
	if len(f) != 3 || f[0] != host {
		return false
	}
	pid, err := strconv.Atoi(f[1])
	if err != nil || pid <= 0 {
		return false
	}
	return procStart(pid) != f[2]
}

func reap(ctx context.Context, label string, match func(map[string]string) bool) (int, error) {
	cli, err := testcontainers.NewDockerClientWithOpts(ctx)
	if err != nil {
		return 0, fmt.Errorf("reap: %w", err)
	}
	defer cli.Close()
	list, err := cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: make(client.Filters).Add("label", label)})
	if err != nil {
		return 0, fmt.Errorf("reap: list containers: %w", err)
	}
	n := 0
	var errs []error
	for _, c := range list.Items {
		if !match(c.Labels) {
			continue
		}
		if _, err := cli.ContainerRemove(ctx, c.ID, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true}); err != nil {
			errs = append(errs, fmt.Errorf("remove %s: %w", c.ID, err))
			continue
		}
		n++
	}
	return n, errors.Join(errs...)
}
