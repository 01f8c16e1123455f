package runtimectl

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/agentoslab/agentlab/runtime/admin"
	"github.com/agentoslab/agentlab/runtime/apps"
	"github.com/agentoslab/agentlab/runtime/apps/launcher"
)

// Status is `agentosd ctl status`.
type Status struct {
	Version   string `json:"version"`
	PID       int    `json:"pid"`
	UID       int    `json:"uid"`
	StartedAt int64  `json:"startedAt"`
	UptimeMs  int64  `json:"uptimeMs"`
	SafeMode  bool   `json:"safeMode"`
	// Tasks is nil when the runtime reports no engine.
	Tasks *admin.TaskCounts `json:"tasks,omitempty"`
	// Apps and Supervisor are their status sections, when present and
	// readable (a section this client cannot read is left nil; Raw has
	// it).
	Apps       *AppsSection       `json:"-"`
	Supervisor *SupervisorSection `json:"-"`
	// Process is the runtime process's figures (nil from a runtime
	// older than the section).
	Process *admin.Process `json:"-"`
	// Raw is the whole result, with sections this type does not name.
	Raw json.RawMessage `json:"-"`
}

// AppsSection is status's "apps" section.
type AppsSection struct {
	Installed    int    `json:"installed"`
	TableVersion uint64 `json:"tableVersion"`
	Error        string `json:"error,omitempty"`
}

// SupervisorSection is status's "supervisor" section.
type SupervisorSection struct {
	State             string `json:"state"`
	Reason            string `json:"reason"`
	Deaths            int    `json:"deaths"`
	RuntimePID        int    `json:"runtimePid"`
	SafeMode          bool   `json:"safeMode"`
	ModuleVersion     string `json:"moduleVersion"`
	ModuleVersionCode string `json:"moduleVersionCode"`
	Error             string `json:"error,omitempty"`
}

// Status asks the runtime for its status.
func (c *Client) Status(ctx context.Context) (*Status, error) {
	var raw json.RawMessage
	if err := c.Call(ctx, &raw, "status"); err != nil {
		return nil, err
	}
	var st Status
	if err := json.Unmarshal(raw, &st); err != nil {
		return nil, fmt.Errorf("agentosd ctl status: decode: %w", err)
	}
	var sections struct {
		Apps       json.RawMessage `json:"apps"`
		Supervisor json.RawMessage `json:"supervisor"`
		Process    json.RawMessage `json:"process"`
	}
	json.Unmarshal(raw, &sections)
	if len(sections.Apps) > 0 {
		var a AppsSection
		if json.Unmarshal(sections.Apps, &a) == nil {
			st.Apps = &a
		}
	}
	if len(sections.Supervisor) > 0 {
		var s SupervisorSection
		if json.Unmarshal(sections.Supervisor, &s) == nil {
			st.Supervisor = &s
		}
	}
	if len(sections.Process) > 0 {
		var p admin.Process
		if json.Unmarshal(sections.Process, &p) == nil {
			st.Process = &p
		}
	}
	st.Raw = raw
	return &st, nil
}

// MethodInfo is one admin method.
type MethodInfo struct {
	Name    string `json:"name"`
	Perm    string `json:"perm"`
	Summary string `json:"summary,omitempty"`
}

// Methods lists the runtime's admin methods (what this runtime can do).
func (c *Client) Methods(ctx context.Context) ([]MethodInfo, error) {
	var out []MethodInfo
	return out, c.Call(ctx, &out, "methods")
}

// AppInstall installs the bundle at remotePath (a file on the device,
// readable by root). Installing the same version by the same signer is a
// no-op: the result's Event is nil.
func (c *Client) AppInstall(ctx context.Context, remotePath string) (*apps.InstallResult, error) {
	var out apps.InstallResult
	if err := c.Call(ctx, &out, "app", "install", remotePath); err != nil {
		return nil, err
	}
	return &out, nil
}

// AppUninstall removes a package, code and data.
func (c *Client) AppUninstall(ctx context.Context, pkg string) (*apps.Package, error) {
	var out apps.Package
	if err := c.Call(ctx, &out, "app", "uninstall", pkg); err != nil {
		return nil, err
	}
	return &out, nil
}

// AppList lists the installed packages.
func (c *Client) AppList(ctx context.Context) ([]apps.Package, error) {
	var out []apps.Package
	return out, c.Call(ctx, &out, "app", "list")
}

// AppPS lists the running app service processes.
func (c *Client) AppPS(ctx context.Context) ([]launcher.Proc, error) {
	var out []launcher.Proc
	return out, c.Call(ctx, &out, "app", "ps")
}

// AppStop stops a package's processes (server "" means all of them) and
// returns how many were stopped.
func (c *Client) AppStop(ctx context.Context, pkg, server string) (int, error) {
	args := []string{"app", "stop", pkg}
	if server != "" {
		args = append(args, server)
	}
	var out launcher.StopResult
	if err := c.Call(ctx, &out, args...); err != nil {
		return 0, err
	}
	return out.Stopped, nil
}

// AppRun runs one of an app's debug commands under the app's uid
// (`app run PKG -- ARGS…`, e.g. AppRun(ctx, pkg, 0, "dump")). timeout 0
// means the runtime's default. A command that ran and failed is a result
// with a non-zero ExitCode, not an error.
func (c *Client) AppRun(ctx context.Context, pkg string, timeout time.Duration, args ...string) (*launcher.RunResult, error) {
	a := []string{"app", "run", pkg}
	if timeout > 0 {
		a = append(a, "--timeout", timeout.String())
	}
	a = append(a, "--")
	a = append(a, args...)
	var out launcher.RunResult
	if err := c.Call(ctx, &out, a...); err != nil {
		return nil, err
	}
	return &out, nil
}
