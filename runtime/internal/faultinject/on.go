//go:build agentos_faultinject

package faultinject

import (
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// Enabled is true: this build injects the faults Active names.
const Enabled = true

// reread bounds how often the fault file is read.
const reread = 500 * time.Millisecond

// maxFileBytes bounds the fault file read.
const maxFileBytes = 4096

var state struct {
	mu     sync.Mutex
	readAt time.Time
	file   []string
	root   string
}

// SetRoot names the root whose fault file is read when $AGENTOS_ROOT is
// unset: the supervisor (which hosts the launcher) has its root from a
// flag, not from its environment.
func SetRoot(root string) {
	state.mu.Lock()
	defer state.mu.Unlock()
	state.root, state.readAt = root, time.Time{}
}

// Active reports whether the fault is selected, by $AGENTOS_FAULT or by
// the fault file under $AGENTOS_ROOT.
func Active(name string) bool {
	if slices.Contains(parse(os.Getenv(Env)), name) {
		return true
	}
	state.mu.Lock()
	defer state.mu.Unlock()
	if time.Since(state.readAt) >= reread {
		root := os.Getenv("AGENTOS_ROOT")
		if root == "" {
			root = state.root
		}
		state.file = readFile(root)
		state.readAt = time.Now()
	}
	return slices.Contains(state.file, name)
}

func readFile(root string) []string {
	if root == "" {
		return nil
	}
	f, err := os.Open(filepath.Join(root, FileName))
	if err != nil {
		return nil
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxFileBytes))
	if err != nil {
		return nil
	}
	return parse(string(b))
}

func parse(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == '|' || r == ' ' || r == '\t' || r == '\n' || r == '\r' })
}
