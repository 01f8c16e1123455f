package apps

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// Default uid range of app bundles. Android gives APKs uids from 10000
// up; bundles start at 10100 and skip every uid Android's package list
// shows in use.
const (
	DefaultFirstUID = 10100
	DefaultLastUID  = 19998
	// DefaultAndroidPackagesList is where Android records its packages'
	// uids; its presence means "this is Android".
	DefaultAndroidPackagesList = "/data/system/packages.list"
)

// ErrNoUID means every uid of the range is taken.
var ErrNoUID = errors.New("no free uid left in the range")

// maxSystemListBytes bounds packages.list and /etc/passwd reads.
const maxSystemListBytes = 8 << 20

// AndroidUIDs returns the uids in use according to Android's
// packages.list ("<package> <uid> <debuggable> <dataDir> …" per line). A
// missing file means this is not Android: no uids. An unreadable one is
// an error: allocating blind could hand an APK's uid to a bundle.
func AndroidUIDs(path string) (map[int]bool, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	defer f.Close()
	uids := map[int]bool{}
	sc := bufio.NewScanner(io.LimitReader(f, maxSystemListBytes))
	sc.Buffer(make([]byte, 64<<10), 64<<10)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 {
			continue
		}
		if uid, err := strconv.Atoi(fields[1]); err == nil && uid >= 0 {
			uids[uid] = true
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return uids, nil
}

// passwdUIDs returns the uids of a passwd file (name:x:uid:…); a missing
// or unreadable file gives none.
func passwdUIDs(path string) map[int]bool {
	uids := map[int]bool{}
	f, err := os.Open(path)
	if err != nil {
		return uids
	}
	defer f.Close()
	sc := bufio.NewScanner(io.LimitReader(f, maxSystemListBytes))
	for sc.Scan() {
		fields := strings.Split(sc.Text(), ":")
		if len(fields) < 3 {
			continue
		}
		if uid, err := strconv.Atoi(fields[2]); err == nil {
			uids[uid] = true
		}
	}
	return uids
}

// allocateUID returns the lowest uid of [first, last] that taken does not
// report.
func allocateUID(first, last int, taken func(int) bool) (int, error) {
	for uid := first; uid <= last; uid++ {
		if !taken(uid) {
			return uid, nil
		}
	}
	return 0, fmt.Errorf("%w (%d-%d)", ErrNoUID, first, last)
}
