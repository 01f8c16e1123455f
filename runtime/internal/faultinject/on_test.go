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

// Without $AGENTOS_ROOT (the supervisor's case) the root SetRoot names
// holds the fault file.
func TestSetRootWithoutEnvironment(t *testing.T) {
	root := t.TempDir()
	t.Setenv("AGENTOS_ROOT", "")
	t.Setenv(Env, "")
	if err := os.WriteFile(filepath.Join(root, FileName), []byte("provider_peer_uid_unchecked\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	SetRoot("")
	if Active(ProviderPeerUIDUnchecked) {
		t.Fatal("no root: no fault file")
	}
	SetRoot(root)
	t.Cleanup(func() { SetRoot("") })
	if !Active(ProviderPeerUIDUnchecked) {
		t.Fatal("the fault file under SetRoot's root selects provider_peer_uid_unchecked")
	}
}
