package lab

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentoslab/agentlab/lab/build"
	"github.com/agentoslab/agentlab/lab/config"
)

// BuildOptions say where the runtime and the apps a run installs come
// from.
type BuildOptions struct {
	// Prebuilt is a folder of prebuilt artifacts (what `agentlab build
	// --out DIR` wrote). Empty: build from the source tree holding the
	// working directory; outside one, use the artifacts.json next to the
	// agentlab executable (a released agentlab ships them side by side).
	Prebuilt string
	// ABIs and Apps override lab.yaml's build.abis and provision.apps.
	ABIs, Apps []string
	// CacheDir is the build cache; default build.DefaultCacheDir().
	CacheDir string
	// OutDir receives the build; default <output>/build in a run, the
	// cache's out folder otherwise. Never the working directory.
	OutDir string
}

// executable is os.Executable; tests replace it.
var executable = os.Executable

// Build returns the artifacts to install on devs (see BuildOptions): for
// the ABIs asked for, else lab.yaml's, else those of devs (probed if
// needed), else the host's. Prebuilt artifacts must cover those ABIs.
func Build(ctx context.Context, cfg *config.Config, devs []*Device, opts *Options) (*build.Artifacts, error) {
	o := opts.orDefault()
	bo := o.Build
	abis := bo.ABIs
	if len(abis) == 0 {
		abis = cfg.Build.ABIs
	}
	if len(abis) == 0 {
		probeAll(ctx, cfg, devs, o)
		abis = abisOf(devs)
	}
	prebuilt, root, err := artifactSource(bo.Prebuilt)
	if err != nil {
		return nil, err
	}
	if prebuilt != "" {
		arts, err := build.Load(prebuilt)
		if err != nil {
			return nil, err
		}
		if missing := arts.Covers(abis); len(missing) > 0 {
			return nil, fmt.Errorf("prebuilt artifacts in %s are for %s; the devices need %s too (agentlab build --abi %s --out %s)",
				prebuilt, strings.Join(arts.ABIs, ", "), strings.Join(missing, ", "), strings.Join(append(arts.ABIs, missing...), ","), prebuilt)
		}
		progressf(o, "using the prebuilt %s artifacts in %s", arts.Version, prebuilt)
		return arts, nil
	}
	apps := bo.Apps
	if len(apps) == 0 {
		apps = cfg.Provision.Apps
	}
	out := bo.OutDir
	if out == "" {
		cache := bo.CacheDir
		if cache == "" {
			cache = build.DefaultCacheDir()
		}
		out = filepath.Join(cache, "out")
	}
	if len(abis) > 0 {
		progressf(o, "building for %s", strings.Join(abis, ", "))
	}
	return build.Build(ctx, &build.Options{
		Root:       root,
		OutDir:     out,
		CacheDir:   bo.CacheDir,
		ABIs:       abis,
		Version:    BuildVersion(o.Version),
		SigningKey: cfg.SigningKeyPath(),
		Apps:       apps,
		Tags:       cfg.Build.Tags,
		// Virtual devices get the runtime whose clock the lab advances.
		Virtual:  !cfg.Build.ReleaseOnVirtual,
		Progress: o.Progress,
		Logger:   o.Logger,
	})
}

// artifactSource says where the artifacts come from: a prebuilt folder,
// or the source tree to build in. Neither is a configuration error, known
// before any device is started.
func artifactSource(asked string) (prebuilt, root string, err error) {
	prebuilt, err = prebuiltDir(asked)
	if err != nil || prebuilt != "" {
		return prebuilt, "", err
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", "", err
	}
	root, err = build.FindSource(wd)
	if err != nil {
		return "", "", &Error{Kind: ErrConfig, Hint: "agentlab run --help",
			Err: fmt.Errorf("%w; outside the source tree, give --prebuilt DIR (what agentlab build --out DIR wrote) or keep those files next to agentlab", err)}
	}
	return "", root, nil
}

// prebuiltDir is the folder of prebuilt artifacts to use: the one asked
// for, else none inside the source tree, else the executable's own folder
// when it holds a manifest, else none (the build then says it needs the
// source tree).
func prebuiltDir(asked string) (string, error) {
	if asked != "" {
		return asked, nil
	}
	if wd, err := os.Getwd(); err == nil {
		if _, err := build.FindSource(wd); err == nil {
			return "", nil
		}
	}
	exe, err := executable()
	if err != nil {
		return "", nil
	}
	if real, err := filepath.EvalSymlinks(exe); err == nil {
		exe = real
	}
	dir := filepath.Dir(exe)
	if _, err := os.Stat(filepath.Join(dir, build.ManifestFile)); err == nil {
		return dir, nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("prebuilt artifacts next to %s: %w", exe, err)
	}
	return "", nil
}
