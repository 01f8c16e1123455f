//go:build agentos_faultinject

package faultinject

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// In a tagged build the environment and the fault file select faults.
func TestActiveSelects(t *testing.T) {
	root := t.TempDir()
	t.Setenv("AGENTOS_ROOT", root)
	t.Setenv(Env, "scope_widen | other")
	if !Active(ScopeWiden) || Active(AppAnswersConsent) || Active(RevokeKeepsTasks) {
		t.Fatal("the environment selects scope_widen only")
	}
	t.Setenv(Env, "")
	if err := os.WriteFile(filepath.Join(root, FileName), []byte("revoke_keeps_tasks\napp_answers_consent\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	state.mu.Lock()
	state.readAt = time.Time{}
	state.mu.Unlock()
	if Active(ScopeWiden) || !Active(AppAnswersConsent) || !Active(RevokeKeepsTasks) {
		t.Fatal("the file selects app_answers_consent and revoke_keeps_tasks")
	}
}
