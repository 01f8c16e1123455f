package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentoslab/agentlab/runtime/admin"
	"github.com/agentoslab/agentlab/runtime/supervise"
	"github.com/agentoslab/agentlab/runtime/transport"
)

// TestSafeModeSwitch: the owner's switch. Without a supervisor's safe
// mode it is the engine's refusal; a safe mode the supervisor started
// is left by asking the supervisor (the request file), and prompts stay
// refused until it restarts the runtime.
func TestSafeModeSwitch(t *testing.T) {
	for _, tc := range []struct {
		name       string
		supervised bool
	}{{"own", false}, {"supervisor's", true}} {
		t.Run(tc.name, func(t *testing.T) {
			data := t.TempDir()
			o := &Options{Data: data, Names: transport.Names{Prefix: fmt.Sprintf("sm%d%v-", os.Getpid(), tc.supervised)}, Tools: noTools{}, AllowOwnUID: true}
			if tc.supervised {
				o.SafeMode, o.Root = true, t.TempDir()
			}
			sys, err := Open(t.Context(), o)
			require.NoError(t, err)
			t.Cleanup(func() { sys.Close(context.Background()) })
			owner := transport.Cred{UID: os.Getuid()}
			call := func(method string) admin.SafeModeResult {
				raw, err := sys.Admin.Invoke(t.Context(), owner, method, nil)
				require.NoError(t, err, method)
				var r admin.SafeModeResult
				require.NoError(t, json.Unmarshal(raw, &r))
				return r
			}
			request := filepath.Join(data, supervise.LeaveRequestName)
			if !tc.supervised {
				require.False(t, sys.Engine.SafeMode())
				assert.True(t, call("safemode.enter").SafeMode)
				assert.True(t, sys.Engine.SafeMode(), "enter did not refuse prompts")
				r := call("safemode.leave")
				assert.False(t, r.SafeMode)
				assert.False(t, r.Restart)
				assert.False(t, sys.Engine.SafeMode(), "leave did not accept prompts again")
				assert.NoFileExists(t, request)
				return
			}
			require.True(t, sys.Engine.SafeMode())
			r := call("safemode.leave")
			assert.True(t, r.SafeMode)
			assert.True(t, r.Restart)
			assert.True(t, sys.Engine.SafeMode(), "prompts accepted before the supervisor restarts the runtime")
			assert.FileExists(t, request, "the supervisor was not asked")
		})
	}
}
