package daemon

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/agentoslab/agentlab/runtime/admin"
	"github.com/agentoslab/agentlab/runtime/engine"
	"github.com/agentoslab/agentlab/runtime/errcode"
	"github.com/agentoslab/agentlab/runtime/supervise"
)

// safeModeSwitch is the owner's safe-mode switch (admin safemode.*).
// Entering is the engine's refusal of new prompts, until left or the
// runtime restarts. Leaving a safe mode the supervisor started (crash
// loop) needs the root-owned marker gone: the runtime asks the
// supervisor for it through a file in its data directory, and keeps
// refusing until the supervisor restarts it normally.
type safeModeSwitch struct {
	engine *engine.Engine
	// request is the supervisor's leave request file; "" without a
	// supervisor or when it did not start this runtime in safe mode.
	request string
}

func newSafeModeSwitch(e *engine.Engine, o *Options) *safeModeSwitch {
	sw := &safeModeSwitch{engine: e}
	if o.SafeMode && o.Root != "" {
		sw.request = filepath.Join(o.Data, supervise.LeaveRequestName)
	}
	return sw
}

var _ admin.SafeModeSwitch = (*safeModeSwitch)(nil)

func (sw *safeModeSwitch) EnterSafeMode(context.Context) (admin.SafeModeResult, error) {
	sw.engine.SetSafeMode(true)
	return admin.SafeModeResult{SafeMode: true, Note: "AgentOS refuses new prompts until safe mode is left or the runtime restarts; running tasks go on"}, nil
}

func (sw *safeModeSwitch) LeaveSafeMode(context.Context) (admin.SafeModeResult, error) {
	if sw.request == "" {
		was := sw.engine.SafeMode()
		sw.engine.SetSafeMode(false)
		if !was {
			return admin.SafeModeResult{Note: "AgentOS is not in safe mode"}, nil
		}
		return admin.SafeModeResult{Note: "AgentOS left safe mode and accepts prompts again"}, nil
	}
	if err := os.WriteFile(sw.request, nil, 0o600); err != nil {
		return admin.SafeModeResult{}, errcode.Wrap(errcode.Internal, "the request to leave safe mode could not be written", fmt.Errorf("safe mode: %w", err))
	}
	return admin.SafeModeResult{SafeMode: true, Restart: true,
		Note: "the supervisor started AgentOS in safe mode; it restarts the runtime normally within one poll (5 s)"}, nil
}
