package quota

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/agentoslab/agentlab/runtime/admin"
)

// Limits are the limits in force as quota.show reports them: the same
// for every third-party app (spec §4.3).
type Limits struct {
	MaxPromptChars int   `json:"maxPromptChars"`
	MaxConcurrent  int   `json:"maxConcurrent"`
	MaxPerHour     int   `json:"maxPerHour"`
	WindowMs       int64 `json:"windowMs"`
}

// ShowResult is quota.show's result.
type ShowResult struct {
	Limits Limits `json:"limits"`
}

// AdminMethods are the quota.* admin methods (the console's authorized
// apps page shows each app's usage against these limits).
func AdminMethods(q *Quota) []admin.Method {
	return []admin.Method{{Name: "quota.show", Perm: admin.Owner, Summary: "the caller quotas in force (prompt length, at once, per hour)",
		Handle: func(_ context.Context, c *admin.Call) (any, error) {
			if err := c.Decode(&struct{}{}); err != nil {
				return nil, err
			}
			cfg := q.Config()
			return ShowResult{Limits: Limits{MaxPromptChars: cfg.MaxPromptChars, MaxConcurrent: cfg.MaxConcurrent,
				MaxPerHour: cfg.MaxPerHour, WindowMs: cfg.Window.Milliseconds()}}, nil
		}}}
}

// CtlVerbs are the `agentosd ctl quota …` verbs.
func CtlVerbs() []admin.Verb {
	return []admin.Verb{{Group: "quota", Name: "show", Method: "quota.show", Summary: "show the caller quotas in force",
		Text: func(w io.Writer, raw json.RawMessage) error {
			var r ShowResult
			if err := json.Unmarshal(raw, &r); err != nil {
				return err
			}
			l := r.Limits
			_, err := fmt.Fprintf(w, "per app: %d prompts per %d min, %d at once, prompts up to %d characters\n",
				l.MaxPerHour, l.WindowMs/60000, l.MaxConcurrent, l.MaxPromptChars)
			return err
		}}}
}
