#!/bin/sh
# Start a Docker engine for the container provider's end-to-end test
# (devices/emulator/cmd/vdcontainer). Run as root; safe to run twice.
# Tries the overlay2 storage driver, then vfs (which works inside
# sandboxes where overlay mounts are refused).
set -eu

if docker info >/dev/null 2>&1; then
	echo "start-dockerd: a Docker engine already answers"
	exit 0
fi
if ! command -v dockerd >/dev/null 2>&1; then
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq docker.io >/dev/null
fi

log=$(mktemp -t dockerd.XXXXXX)
for driver in overlay2 vfs; do
	nohup dockerd --storage-driver="$driver" >"$log" 2>&1 &
	pid=$!
	i=0
	while [ $i -lt 30 ]; do
		if docker info >/dev/null 2>&1; then
			echo "start-dockerd: dockerd (pid $pid, storage $driver) is up; log in $log"
			exit 0
		fi
		if ! kill -0 "$pid" 2>/dev/null; then
			break
		fi
		sleep 1
		i=$((i + 1))
	done
	echo "start-dockerd: dockerd with $driver did not come up:" >&2
	tail -n 5 "$log" >&2 || true
	kill "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
	rm -f /var/run/docker.pid
done
echo "start-dockerd: no Docker engine; the container test will skip" >&2
exit 1
