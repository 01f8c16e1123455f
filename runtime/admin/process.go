package admin

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"runtime"
	"strconv"
)

// Process are the runtime process's own figures, status's "process"
// section: what a soak samples to tell a leak from a plateau.
type Process struct {
	Goroutines int `json:"goroutines"`
	// RSSBytes is the resident set (VmRSS); 0 where /proc has none.
	RSSBytes int64 `json:"rssBytes"`
	// FDs are the open descriptors; -1 where /proc/self/fd is unreadable.
	FDs int `json:"fds"`
	// StoreBytes is the size of the store's files (the database and its
	// journal), summed.
	StoreBytes int64 `json:"storeBytes"`
}

// ProcessSection is the "process" status section; store lists the
// store's files (a missing one counts 0).
func ProcessSection(store ...string) StatusSection {
	return StatusSection{Name: "process", Read: func(context.Context) (any, error) {
		return ReadProcess(store...)
	}}
}

// ReadProcess reads this process's figures.
func ReadProcess(store ...string) (Process, error) {
	p := Process{Goroutines: runtime.NumGoroutine(), FDs: -1}
	if ents, err := os.ReadDir("/proc/self/fd"); err == nil {
		p.FDs = len(ents) - 1 // ReadDir's own descriptor is listed too
	}
	rss, err := ProcRSS("/proc/self/status")
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return p, err
	}
	p.RSSBytes = rss
	for _, f := range store {
		if st, err := os.Stat(f); err == nil {
			p.StoreBytes += st.Size()
		}
	}
	return p, nil
}

// ProcRSS reads VmRSS from a /proc/PID/status file, in bytes.
func ProcRSS(statusFile string) (int64, error) {
	b, err := os.ReadFile(statusFile)
	if err != nil {
		return 0, err
	}
	return parseVmRSS(b)
}

func parseVmRSS(b []byte) (int64, error) {
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		rest, ok := bytes.CutPrefix(sc.Bytes(), []byte("VmRSS:"))
		if !ok {
			continue
		}
		f := bytes.Fields(rest)
		if len(f) != 2 || string(f[1]) != "kB" {
			return 0, fmt.Errorf("VmRSS: unexpected %q", rest)
		}
		kb, err := strconv.ParseInt(string(f[0]), 10, 64)
		if err != nil || kb < 0 {
			return 0, fmt.Errorf("VmRSS: %q", f[0])
		}
		return kb << 10, nil
	}
	return 0, nil // kernel threads have no VmRSS
}

// StoreFiles are the files of the SQLite database at db.
func StoreFiles(db string) []string {
	return []string{db, db + "-wal", db + "-shm", db + "-journal"}
}
