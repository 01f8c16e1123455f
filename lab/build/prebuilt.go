package build

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// ManifestFile is the manifest Build writes into OutDir: the Artifacts as
// JSON.
const ManifestFile = "artifacts.json"

// ErrNoPrebuilt: a folder holds no prebuilt artifacts.
var ErrNoPrebuilt = errors.New("no prebuilt artifacts")

// Load reads prebuilt artifacts from dir: the folder a Build wrote
// (agentlab build --out dir), copied anywhere — next to a released
// agentlab, onto a CI runner. The manifest's recorded paths are ignored;
// each file is found in dir by the layout Build writes (<abi>/agentosd,
// <abi>/agentos-module.zip, bundles/<app>.agentapp), and every one must
// exist. A dir without a manifest is an error wrapping ErrNoPrebuilt.
func Load(dir string) (*Artifacts, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(filepath.Join(dir, ManifestFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("build: %s: %w (%s not found; agentlab build --out %s writes one)", dir, ErrNoPrebuilt, ManifestFile, dir)
	}
	if err != nil {
		return nil, fmt.Errorf("build: prebuilt: %w", err)
	}
	var a Artifacts
	if err := json.Unmarshal(data, &a); err != nil {
		return nil, fmt.Errorf("build: %s: %w", filepath.Join(dir, ManifestFile), err)
	}
	if len(a.ABIs) == 0 {
		return nil, fmt.Errorf("build: %s lists no ABI", filepath.Join(dir, ManifestFile))
	}
	var missing []string
	at := func(rel string) string {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if _, err := os.Stat(p); err != nil {
			missing = append(missing, rel)
		}
		return p
	}
	a.Agentosd, a.Modules = map[string]string{}, map[string]string{}
	for _, abi := range a.ABIs {
		if goarchOf[abi] == "" {
			return nil, fmt.Errorf("build: %s: unknown ABI %q", filepath.Join(dir, ManifestFile), abi)
		}
		a.Agentosd[abi] = at(abi + "/agentosd")
		a.Modules[abi] = at(abi + "/agentos-module.zip")
	}
	for i := range a.Bundles {
		b := &a.Bundles[i]
		if b.App == "" || strings.ContainsAny(b.App, `/\`) || b.App == "." || b.App == ".." {
			return nil, fmt.Errorf("build: %s: bundle app name %q", filepath.Join(dir, ManifestFile), b.App)
		}
		b.Path = at("bundles/" + b.App + ".agentapp")
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("build: prebuilt artifacts in %s lack %s", dir, strings.Join(missing, ", "))
	}
	return &a, nil
}

// Covers reports the ABIs of abis that a lacks.
func (a *Artifacts) Covers(abis []string) (missing []string) {
	for _, abi := range abis {
		if !slices.Contains(a.ABIs, abi) && !slices.Contains(missing, abi) {
			missing = append(missing, abi)
		}
	}
	return missing
}
