package admin

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"time"
)

// Tasks reports the engine's running and queued tasks and whether it is
// in safe mode, for the status method (Options.Tasks).
type Tasks func() (running, queued int, safeMode bool)

// StatusSection adds one named section to the status result; features
// that want to show something in `agentosd ctl status` give the
// composition root theirs for Options.Status (the package table's
// "apps", the supervisor's status file's "supervisor"). A section that
// fails is reported as {"error": "..."} and does not fail the call.
type StatusSection struct {
	Name string
	Read func(ctx context.Context) (any, error)
}

// TaskCounts are the engine's running and queued tasks.
type TaskCounts struct {
	Running int `json:"running"`
	Queued  int `json:"queued"`
}

// builtins are the methods every admin server has.
func (s *Server) builtins() []Method {
	return append([]Method{
		{Name: "methods", Perm: Owner, Summary: "list the admin methods and who may call them", Handle: s.listMethods},
		{Name: "status", Perm: Owner, Summary: "runtime version, pid, uptime, safe mode, tasks, apps, supervisor", Handle: s.status},
	}, s.safeModeMethods()...)
}

// Verbs are the ctl verbs of the built-in methods.
func Verbs() []Verb {
	return append([]Verb{
		{Name: "methods", Method: "methods", Summary: "list the admin methods", Text: printMethods},
		{Name: "status", Method: "status", Summary: "show the runtime's status", Text: printStatus},
	}, safeModeVerbs()...)
}

type methodInfo struct {
	Name    string `json:"name"`
	Perm    string `json:"perm"`
	Summary string `json:"summary,omitempty"`
}

func (s *Server) listMethods(ctx context.Context, c *Call) (any, error) {
	out := make([]methodInfo, 0, len(s.methods.methods))
	for _, m := range s.methods.methods {
		out = append(out, methodInfo{m.Name, m.Perm.String(), m.Summary})
	}
	return out, nil
}

func printMethods(w io.Writer, raw json.RawMessage) error {
	var ms []methodInfo
	if err := json.Unmarshal(raw, &ms); err != nil {
		return err
	}
	for _, m := range ms {
		fmt.Fprintf(w, "%-28s %-20s %s\n", m.Name, m.Perm, m.Summary)
	}
	return nil
}

func (s *Server) status(ctx context.Context, c *Call) (any, error) {
	now := time.Now()
	out := map[string]any{
		"version":   s.version,
		"pid":       os.Getpid(),
		"uid":       os.Getuid(),
		"startedAt": s.started.UnixMilli(),
		"uptimeMs":  now.Sub(s.started).Milliseconds(),
		"safeMode":  false,
	}
	// The supplementary groups the supervisor gave (inet: the network).
	if groups, err := os.Getgroups(); err == nil {
		out["groups"] = groups
	}
	if s.tasks != nil {
		running, queued, safe := s.tasks()
		out["safeMode"] = safe
		out["tasks"] = TaskCounts{Running: running, Queued: queued}
	}
	for _, sec := range s.sections {
		v, err := sec.Read(ctx)
		if err != nil {
			v = map[string]string{"error": err.Error()}
		}
		out[sec.Name] = v
	}
	return out, nil
}

func printStatus(w io.Writer, raw json.RawMessage) error {
	var st map[string]json.RawMessage
	if err := json.Unmarshal(raw, &st); err != nil {
		return err
	}
	var (
		version  string
		pid, uid int
		uptimeMs int64
		safeMode bool
		tasks    *TaskCounts
	)
	json.Unmarshal(st["version"], &version)
	json.Unmarshal(st["pid"], &pid)
	json.Unmarshal(st["uid"], &uid)
	json.Unmarshal(st["uptimeMs"], &uptimeMs)
	json.Unmarshal(st["safeMode"], &safeMode)
	if t, ok := st["tasks"]; ok {
		tasks = new(TaskCounts)
		json.Unmarshal(t, tasks)
	}
	if version == "" {
		version = "(unknown version)"
	}
	fmt.Fprintf(w, "runtime     agentosd %s, pid %d, uid %d, up %s\n", version, pid, uid, (time.Duration(uptimeMs) * time.Millisecond).Round(time.Second))
	fmt.Fprintf(w, "safe mode   %s\n", onOff(safeMode))
	if tasks != nil {
		fmt.Fprintf(w, "tasks       %d running, %d queued\n", tasks.Running, tasks.Queued)
	}
	for _, name := range sortedKeys(st) {
		switch name {
		case "version", "pid", "uid", "startedAt", "uptimeMs", "safeMode", "tasks", "groups":
			continue
		}
		fmt.Fprintf(w, "%-11s %s\n", name, sectionText(st[name]))
	}
	return nil
}

// sectionText renders a section compactly: a flat object as k=v pairs.
func sectionText(raw json.RawMessage) string {
	var m map[string]any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if dec.Decode(&m) != nil {
		return string(raw)
	}
	var b []byte
	for _, k := range sortedKeys(m) {
		if len(b) > 0 {
			b = append(b, ' ')
		}
		v := m[k]
		switch x := v.(type) {
		case string:
			b = fmt.Appendf(b, "%s=%s", k, x)
		default:
			j, _ := json.Marshal(x)
			b = fmt.Appendf(b, "%s=%s", k, j)
		}
	}
	return string(b)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}
