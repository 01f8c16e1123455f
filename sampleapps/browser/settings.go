package browser

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Version of the app, reported by browser_info.
const (
	VersionName = "1.0.0"
	VersionCode = 1
)

// SettingsFile holds the device's search engines in the data directory.
const SettingsFile = "settings.json"

// Settings are what a device configures (`browser search_engine …`).
type Settings struct {
	// SearchEngines adds engines (name → URL template with {q}) to the
	// defaults or replaces them by name.
	SearchEngines map[string]string `json:"search_engines,omitempty"`
	// DefaultEngine is browser_search's engine when none is named.
	DefaultEngine string `json:"default_engine,omitempty"`
}

// LoadSettings reads dir's settings; none is the zero Settings.
func LoadSettings(dir string) (Settings, error) {
	var s Settings
	b, err := os.ReadFile(filepath.Join(dir, SettingsFile))
	if errors.Is(err, os.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return s, err
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return s, fmt.Errorf("%s: %w", SettingsFile, err)
	}
	return s, nil
}

// SaveSettings writes dir's settings atomically.
func SaveSettings(dir string, s Settings) error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	tmp := filepath.Join(dir, SettingsFile+".tmp")
	if err := os.WriteFile(tmp, append(b, '\n'), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, SettingsFile))
}

// CheckEngine validates an engine's name and URL template.
func CheckEngine(name, tmpl string) error {
	if name == "" || len(name) > 32 || strings.ContainsAny(name, " \t\n/") {
		return fmt.Errorf("engine name %q must be 1-32 characters without spaces or '/'", clip(name))
	}
	if !strings.Contains(tmpl, "{q}") {
		return fmt.Errorf("the URL template must contain {q}")
	}
	u, err := url.Parse(strings.ReplaceAll(tmpl, "{q}", "x"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%q is not an http(s) URL template", clip(tmpl))
	}
	return nil
}

// Engines merges settings into the default engines.
func (s Settings) Engines() map[string]string {
	out := map[string]string{}
	for k, v := range DefaultEngines {
		out[k] = v
	}
	for k, v := range s.SearchEngines {
		out[k] = v
	}
	return out
}

// EngineNames are the engines' names, sorted.
func EngineNames(m map[string]string) []string {
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	slices.Sort(names)
	return names
}
