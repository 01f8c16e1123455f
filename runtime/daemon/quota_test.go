package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentoslab/agentlab/runtime/quota"
	"github.com/agentoslab/agentlab/runtime/transport"
)

// TestQuotaShow: quota.show reports the limits the engine's admission
// enforces, the defaults and an override alike.
func TestQuotaShow(t *testing.T) {
	sys, err := Open(t.Context(), &Options{Data: t.TempDir(), Names: transport.Names{Prefix: fmt.Sprintf("qs%d-", os.Getpid())}, Tools: noTools{}, AllowOwnUID: true})
	require.NoError(t, err)
	t.Cleanup(func() { sys.Close(context.Background()) })
	show := func() quota.Limits {
		raw, err := sys.Admin.Invoke(t.Context(), transport.Cred{UID: os.Getuid()}, "quota.show", nil)
		require.NoError(t, err)
		var r quota.ShowResult
		require.NoError(t, json.Unmarshal(raw, &r))
		return r.Limits
	}
	assert.Equal(t, quota.Limits{MaxPromptChars: 16000, MaxConcurrent: 1, MaxPerHour: 30, WindowMs: 3600000}, show())
	sys.Quota.SetConfig(quota.Config{MaxPerHour: 2, Window: time.Minute})
	assert.Equal(t, quota.Limits{MaxPromptChars: 16000, MaxConcurrent: 1, MaxPerHour: 2, WindowMs: 60000}, show())
}
