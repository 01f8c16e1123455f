package supervise

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// State is the supervisor's state as the status file reports it.
type State string

const (
	StateInit     State = "init"      // starting, waiting for boot
	StateOK       State = "ok"        // the runtime runs
	StateBackoff  State = "backoff"   // the runtime died with tasks; restart pending
	StateSafeMode State = "safe_mode" // crash loop: the runtime runs (or ran) in safe mode
	StateStopped  State = "stopped"   // the runtime is not running and will not be restarted by itself
)

// Reasons of the status file (spec §11 names most of them).
const (
	ReasonBoot              = "boot"
	ReasonRuntimeUp         = "runtime_up"
	ReasonRuntimeDied       = "runtime_died"
	ReasonCrashLoop         = "crash_loop"
	ReasonSafeModeExited    = "safe_mode_exited"
	ReasonModuleDisabled    = "module_disabled"
	ReasonSupervisorExited  = "supervisor_exited"
	ReasonRestart           = "restart"
	ReasonUIDConflict       = "uid_conflict"
	ReasonRuntimeStartError = "runtime_start_failed"
	ReasonUnsupportedAPI    = "unsupported_api"
	ReasonUserStopped       = "user_stopped"
)

// Status is the content of the status file (<root>/status), key=value
// lines readable by the runtime (mode 0644).
type Status struct {
	State  State
	Reason string
	// Seq grows with every write.
	Seq uint64
	// Since is when State was entered (unix ms).
	Since int64
	// Deaths is the number of runtime deaths in the crash-loop window.
	Deaths int
	// RuntimePID is the runtime's pid (0 when not running).
	RuntimePID int
	// BackoffMs is the restart delay chosen (state backoff only).
	BackoffMs         int64
	SafeMode          bool
	ModuleVersion     string
	ModuleVersionCode string
	// BootCount counts the supervisor's starts on this root (one a boot).
	BootCount int64
}

const statusProtocol = 1

// Marshal renders the status file.
func (s Status) Marshal() []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "protocol=%d\n", statusProtocol)
	fmt.Fprintf(&b, "state=%s\n", s.State)
	fmt.Fprintf(&b, "reason=%s\n", s.Reason)
	fmt.Fprintf(&b, "seq=%d\n", s.Seq)
	fmt.Fprintf(&b, "since=%d\n", s.Since)
	fmt.Fprintf(&b, "deaths=%d\n", s.Deaths)
	fmt.Fprintf(&b, "runtime_pid=%d\n", s.RuntimePID)
	fmt.Fprintf(&b, "backoff_ms=%d\n", s.BackoffMs)
	fmt.Fprintf(&b, "safe_mode=%d\n", b2i(s.SafeMode))
	fmt.Fprintf(&b, "module_version=%s\n", oneLine(s.ModuleVersion))
	fmt.Fprintf(&b, "module_version_code=%s\n", oneLine(s.ModuleVersionCode))
	fmt.Fprintf(&b, "boot_count=%d\n", s.BootCount)
	return b.Bytes()
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func oneLine(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return -1
		}
		return r
	}, s)
}

// maxKVLines and maxKVBytes bound the key=value files the supervisor and
// the runtime read from each other (spec §4.12: ≤ 16 heartbeat lines).
const (
	maxKVLines = 16
	maxKVBytes = 4096
)

// readKV reads a small key=value file safely: no symlink is followed, a
// FIFO or any non-regular file is refused without blocking, at most
// maxKVBytes and maxKVLines are read. It is how root reads files that a
// less trusted uid can replace.
func readKV(path string) (map[string]string, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file", path)
	}
	m := map[string]string{}
	sc := bufio.NewScanner(io.LimitReader(f, maxKVBytes))
	for n := 0; sc.Scan() && n < maxKVLines; n++ {
		k, v, ok := strings.Cut(sc.Text(), "=")
		if ok && k != "" {
			m[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	return m, nil
}

// ReadStatus reads a status file written by the supervisor.
func ReadStatus(path string) (*Status, error) {
	m, err := readKV(path)
	if err != nil {
		return nil, fmt.Errorf("read supervisor status: %w", err)
	}
	if m["protocol"] != strconv.Itoa(statusProtocol) {
		return nil, fmt.Errorf("read supervisor status: protocol %q", m["protocol"])
	}
	s := &Status{State: State(m["state"]), Reason: m["reason"], ModuleVersion: m["module_version"], ModuleVersionCode: m["module_version_code"]}
	s.Seq, _ = strconv.ParseUint(m["seq"], 10, 64)
	s.Since, _ = strconv.ParseInt(m["since"], 10, 64)
	s.Deaths, _ = strconv.Atoi(m["deaths"])
	s.RuntimePID, _ = strconv.Atoi(m["runtime_pid"])
	s.BackoffMs, _ = strconv.ParseInt(m["backoff_ms"], 10, 64)
	s.SafeMode = m["safe_mode"] == "1"
	s.BootCount, _ = strconv.ParseInt(m["boot_count"], 10, 64)
	return s, nil
}

// writeAtomic writes path through a temporary file and a rename.
func writeAtomic(path string, b []byte, mode os.FileMode) error {
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".tmp")
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|unix.O_NOFOLLOW, mode)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Chmod(mode)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	return os.Rename(tmp, path)
}

// Heartbeat is what the runtime writes to <data>/heartbeat: key=value
// lines pid, tasks, at (unix ms), state (starting|recovering|idle|busy|
// stopping|crashed). At most 16 lines are read; only a regular file is.
type Heartbeat struct {
	PID   int
	Tasks int
	At    int64
	State string
}

// ReadHeartbeat reads a heartbeat file.
func ReadHeartbeat(path string) (*Heartbeat, error) {
	m, err := readKV(path)
	if err != nil {
		return nil, err
	}
	h := &Heartbeat{State: m["state"]}
	h.PID, _ = strconv.Atoi(m["pid"])
	h.At, _ = strconv.ParseInt(m["at"], 10, 64)
	tasks, err := strconv.Atoi(m["tasks"])
	if err != nil || tasks < 0 {
		return nil, errors.New("heartbeat: no valid tasks count")
	}
	h.Tasks = tasks
	return h, nil
}

// readModuleProp returns version and versionCode of a module.prop.
func readModuleProp(modDir string) (version, code string) {
	if modDir == "" {
		return "", ""
	}
	m, err := readKV(filepath.Join(modDir, "module.prop"))
	if err != nil {
		return "", ""
	}
	return m["version"], m["versionCode"]
}
