package host

import (
	"path/filepath"

	"github.com/agentoslab/agentlab/runtime/consent"
	"github.com/agentoslab/agentlab/runtime/errcode"
	"github.com/agentoslab/agentlab/runtime/ext/internal/durable"
)

// Policy health (wire.Health.Policy).
const (
	PolicyHealthy   = "healthy"
	PolicyRecovered = "recovered"
	// PolicyCorrupt: file and backup unreadable; every third-party plugin
	// is off and writes are refused until `plugins policy reset`.
	PolicyCorrupt = "corrupt"
)

// policyStore is the approval policy file (ApprovalStore) with its
// backup. Not safe for concurrent use: the host's lock guards it.
type policyStore struct {
	file   durable.File
	policy *consent.Policy
	health string
	using  string // file, backup, new, fail_closed
}

func openPolicy(dataDir string) *policyStore {
	ps := &policyStore{file: durable.File{
		Path:   filepath.Join(dataDir, filepath.FromSlash(consent.PolicyFile)),
		Backup: filepath.Join(dataDir, filepath.FromSlash(consent.PolicyBackupFile)),
	}}
	var p *consent.Policy
	src, _ := ps.file.Load(func(b []byte) error {
		var err error
		p, err = consent.ParsePolicy(b)
		return err
	})
	switch src {
	case durable.FromFile:
		ps.policy, ps.health, ps.using = p, PolicyHealthy, "file"
	case durable.FromBackup:
		ps.policy, ps.health, ps.using = p, PolicyRecovered, "backup"
	case durable.None:
		ps.policy, ps.health, ps.using = consent.NewPolicy(), PolicyHealthy, "new"
	default:
		ps.policy, ps.health, ps.using = consent.FailClosedPolicy(), PolicyCorrupt, "fail_closed"
	}
	return ps
}

// errPolicyUnavailable refuses writes while the policy is corrupt.
func errPolicyUnavailable() *errcode.Error {
	return errcode.New(errcode.InvalidState, "the approval policy is unreadable; run `plugins policy reset` first").
		WithDetails(map[string]any{"reason": "unavailable"})
}

// update changes the policy with f and writes it; refused while corrupt.
// On a write error the change is kept in memory only until the next
// successful write.
func (ps *policyStore) update(f func(p *consent.Policy) error) error {
	if ps.health == PolicyCorrupt {
		return errPolicyUnavailable()
	}
	next := ps.policy.Clone()
	if err := f(next); err != nil {
		return err
	}
	if err := ps.file.Save(next.Marshal()); err != nil {
		return errcode.Wrap(errcode.StoreFailed, "the approval policy could not be written", err)
	}
	ps.policy = next
	if ps.using != "file" {
		ps.using = "file"
	}
	return nil
}

// reset writes a fresh policy in which every plugin of off is disabled.
func (ps *policyStore) reset(off []string) error {
	p := consent.NewPolicy()
	for _, name := range off {
		p.SetEnabled(consent.Target{Plugin: name}, false)
	}
	if err := ps.file.Save(p.Marshal()); err != nil {
		return errcode.Wrap(errcode.StoreFailed, "the approval policy could not be written", err)
	}
	ps.policy, ps.health, ps.using = p, PolicyHealthy, "file"
	return nil
}
