package killmatrix_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentoslab/agentlab/scenarios/internal/labtest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentoslab/agentlab/reports"
	"github.com/agentoslab/agentlab/runtime/faults"
)

// The acceptance: breaking a rule in the runtime on purpose makes
// the scenarios that guard it fail. TestKillMatrix runs the real
// agentlab mutate --guards on two virtual devices: the runtime built with
// the agentos_faultinject tag, every fault's guarding scenarios (declared
// with the fault in runtime/faults) run once with no fault, where they
// pass, and then each fault against its own guards. Every fault must be
// caught — by the named checks below where they are pinned — and the kill
// matrix must be in the output and in report.html. (agentlab mutate with
// its defaults runs the whole suite per fault; that is the nightly's, not
// a test's, budget.)

// mutateYAML: two virtual devices (mutate provisions them once and
// spreads each round's scenarios over them), the stub, the suite, a state
// directory and an output of the test's own.
const mutateYAML = `stateDir: %[1]s/state
` + labtest.TwoVirtualDevices + `retries: {attempts: 2, budget: 20, labFaultRequeues: 10}
output: %[1]s/out
scenarios: [%[2]s]
`

// pinned are checks that must be among those a fault turns red: the
// rule's own checks, so a matrix that catches a fault by accident only
// (a step that errors elsewhere) does not pass for these.
var pinned = map[string][]string{
	"scope_widen":         {"security/compromised-scope: onlyEchoOffered", "third-party/catalog-tools: scopeWithoutEchoBlocksIt"},
	"app_answers_consent": {"security/self-consent: adminSocketClosedUnread", "security/self-consent: stillPending"},
	"revoke_keeps_tasks": {"third-party/revoke-closes: tasksCancelled", "third-party/revoke-after-detach: tasksCancelled",
		"sms/revoke: nothingCreated", "notes/revoke: nothingCreated"},
	"spoofed_caller_name":          {"third-party/spoofed-name: cardCallerPackageIsReal"},
	"pairing_attempts_unlimited":   {"desktop/pairing: tooManyAttempts"},
	"pairing_code_reusable":        {"desktop/pairing: codeIsOneTime", "security/acp-ts-client: codeSingleUse"},
	"desktop_any_uid":              {"desktop/uid-admission: appUidClosedUnread"},
	"read_skill_dotdot":            {"security/read-skill-traversal: dotDotRefused"},
	"session_mcp_loopback":         {"third-party/sessions: mcpLoopbackRejected"},
	"model_key_logged":             {"security/model-key-not-logged: keyNotInRuntimeLog"},
	"oversize_closes_channel":      {"security/oversize-stays-open: endTurn", "security/oversize-stays-open: nextPromptServed"},
	"consent_timeout_allows":       {"fault/consent-timeout-short: deniedByTimeout"},
	"high_offers_always_allow":     {"consent/sample-apps: highOnlyOnceDeny", "apps/e2e-failures: consentAudit"},
	"plugins_enabled_by_default":   {"apps/e2e-prepare: discoveredOffByDefault"},
	"unoffered_answer_allows":      {"consent/surface: notOfferedIsDeny"},
	"provider_peer_uid_unchecked":  {"security/provider-squat: squatterNeverCalled"},
	"aci_peer_uid_unchecked":       {"aci/socket-squat: squatterNeverCalled"},
	"aci_cap_permission_unchecked": {"aci/cap-permission: refusedWithoutCapPermission"},
	"aci_confirm_not_high":         {"aci/consent-dangerous: highCardEveryCall"},
	"autoselect_ignores_scope":     {"third-party/auto-select: scopeMustMatch"},
}

// survivors are faults no scenario can catch yet, each with why. The test
// fails when one of them is caught, so the list only shrinks.
var survivors = map[string]string{
	"soak_leak": "a leak shows over many iterations, never in one scenario: scenarios/soak catches it with agentlab run --soak",
}

func TestKillMatrix(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Minute)
	defer cancel()
	agentlab, repo, _ := labtest.Agentlab(t, ctx, "runs agentlab mutate --guards on a virtual device (about 4 minutes)")
	tmp := filepath.Dir(agentlab)
	cfg := filepath.Join(tmp, "lab.yaml")
	require.NoError(t, os.WriteFile(cfg, fmt.Appendf(nil, mutateYAML, tmp, filepath.Join(repo, "scenarios")), 0o644))

	start := time.Now()
	cmd := exec.CommandContext(ctx, agentlab, "--config", cfg, "--json", "mutate", "--guards")
	cmd.Dir = repo
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	var ee *exec.ExitError
	if err != nil && (!errors.As(err, &ee) || ee.ExitCode() != 1) {
		t.Fatalf("agentlab mutate: %v\n%s", err, labtest.TailLines(stderr.String(), 60))
	}
	t.Logf("agentlab mutate --guards, %d faults: %s", len(faults.All), time.Since(start).Round(time.Second))

	var m reports.KillMatrix
	require.NoError(t, json.Unmarshal(stdout, &m), "mutate --json prints the matrix\n%s", labtest.TailLines(stderr.String(), 40))
	out := filepath.Join(tmp, "out")
	onDisk, err := os.ReadFile(filepath.Join(out, reports.KillMatrixFile))
	require.NoError(t, err)
	var written reports.KillMatrix
	require.NoError(t, json.Unmarshal(onDisk, &written))
	assert.Equal(t, m, written, "kill-matrix.json is what --json printed")
	page, err := os.ReadFile(filepath.Join(out, "report.html"))
	require.NoError(t, err)
	assert.Contains(t, string(page), `<section id="kill-matrix">`)

	assert.Empty(t, m.Baseline.Red, "every guard passes without a fault")
	byName := map[string]reports.KillFault{}
	for _, f := range m.Faults {
		byName[f.Name] = f
	}
	for _, f := range faults.All {
		kf, ran := byName[f.Name]
		if !assert.True(t, ran, "fault %s had no round", f.Name) {
			continue
		}
		if why, ok := survivors[f.Name]; ok {
			assert.False(t, kf.Caught, "%s is caught now (by %v): take it off the survivors (%s)", f.Name, kf.Checks, why)
			continue
		}
		if assert.True(t, kf.Caught, "fault %s survived its guards %v", f.Name, f.Guards) {
			t.Logf("%s caught by %s", f.Name, strings.Join(kf.Checks, "; "))
		}
		for _, c := range pinned[f.Name] {
			assert.True(t, slices.Contains(kf.Checks, c), "%s did not turn %q red (red: %v)", f.Name, c, kf.Checks)
		}
	}
	t.Logf("%d of %d faults caught; %d unproven checks among the guards", m.Caught, len(m.Faults), m.UnprovenCount)
	if err != nil {
		// Exit 1 is a survivor: only the listed ones may survive.
		assert.Equal(t, len(survivors), m.Survived, "agentlab mutate exited 1")
	}
}
