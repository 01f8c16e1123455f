package skills

import (
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Skill catalog limits (spec §4.10).
const (
	MaxNameInputChars    = 200
	MaxNameChars         = 64
	MaxDescriptionChars  = 1024
	MaxSkillsPerPlugin   = 64
	MaxSkillsTotal       = 256
	DefaultSkillFileName = "SKILL.md"
)

// ValidName reports whether s is a valid skill or skill-directory name:
// [A-Za-z0-9][A-Za-z0-9._-]{0,63}.
func ValidName(s string) bool {
	if len(s) < 1 || len(s) > MaxNameChars {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		alnum := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
		if !alnum && (i == 0 || c != '.' && c != '_' && c != '-') {
			return false
		}
	}
	return true
}

// cleanText drops control and format characters and invalid UTF-8,
// collapses every run of whitespace (line breaks included) to one space,
// trims, and cuts to max UTF-16 units without splitting a pair.
func cleanText(s string, max int) string {
	var b strings.Builder
	space := false
	units := 0
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		switch {
		case r == utf8.RuneError && size == 1:
			continue
		case unicode.IsSpace(r) || unicode.Is(unicode.Zs, r):
			space = true
			continue
		case unicode.Is(unicode.Cc, r) || unicode.Is(unicode.Cf, r):
			continue
		}
		w := 1
		if r > 0xFFFF {
			w = 2
		}
		sp := 0
		if space && b.Len() > 0 {
			sp = 1
		}
		if units+sp+w > max {
			break
		}
		if sp == 1 {
			b.WriteByte(' ')
		}
		space = false
		b.WriteRune(r)
		units += sp + w
	}
	return b.String()
}

// CleanDescription is a skill description as the catalog keeps it:
// whitespace collapsed, controls and format characters removed, at most
// 1,024 characters. It may be empty.
func CleanDescription(s string) string { return cleanText(s, MaxDescriptionChars) }

// SkillName picks a skill's name: the frontmatter name cleaned (at most
// 200 characters first) if it is a valid name, else the directory name
// if that is valid; ok is false when neither is (the skill is skipped).
func SkillName(frontmatterName, dir string) (name string, ok bool) {
	if n := cleanText(frontmatterName, MaxNameInputChars); ValidName(n) {
		return n, true
	}
	if ValidName(dir) {
		return dir, true
	}
	return "", false
}

// Skill is one skill of the catalog.
type Skill struct {
	// Plugin is the plugin's name (plugin.json name).
	Plugin string `json:"plugin"`
	// PluginID is the plugin's registry id, "<package>/<dir>".
	PluginID string `json:"pluginId"`
	// Builtin marks AgentOS's own plugins, listed first.
	Builtin bool `json:"builtin,omitempty"`
	// Dir is the skill's directory under skills/.
	Dir string `json:"dir"`
	// Name is the skill's name (SkillName).
	Name        string `json:"name"`
	Description string `json:"description"`
	// ID is what read_skill takes; BuildCatalog assigns it.
	ID string `json:"id"`
}

// BuildCatalog orders skills (built-ins first, then by plugin id, then by
// directory), keeps at most 64 per plugin and 256 in total, and assigns
// ids (spec §6.5): the name when unique in the catalog; for every skill
// sharing a name, "<plugin>:<name>"; for skills that still share an id,
// "<plugin>:<dir>". A repeated (plugin id, dir) pair is dropped.
func BuildCatalog(in []Skill) []Skill {
	all := append([]Skill(nil), in...)
	sort.SliceStable(all, func(i, j int) bool {
		a, b := all[i], all[j]
		if a.Builtin != b.Builtin {
			return a.Builtin
		}
		if a.PluginID != b.PluginID {
			return a.PluginID < b.PluginID
		}
		return a.Dir < b.Dir
	})
	type key struct{ plugin, dir string }
	seen := map[key]bool{}
	perPlugin := map[string]int{}
	out := make([]Skill, 0, min(len(all), MaxSkillsTotal))
	for _, s := range all {
		k := key{s.PluginID, s.Dir}
		if seen[k] || perPlugin[s.PluginID] >= MaxSkillsPerPlugin || len(out) >= MaxSkillsTotal {
			continue
		}
		seen[k] = true
		perPlugin[s.PluginID]++
		out = append(out, s)
	}
	byName := map[string]int{}
	for _, s := range out {
		byName[s.Name]++
	}
	for i := range out {
		if byName[out[i].Name] == 1 {
			out[i].ID = out[i].Name
		} else {
			out[i].ID = out[i].Plugin + ":" + out[i].Name
		}
	}
	// "<plugin>:<dir>" can meet another skill's "<plugin>:<name>"; repeat
	// until unique. (plugin id, dir) is unique, so the last resort
	// "<plugin id>:<dir>" always ends it.
	for round := 0; ; round++ {
		byID := map[string]int{}
		for _, s := range out {
			byID[s.ID]++
		}
		clash := false
		for i := range out {
			if byID[out[i].ID] < 2 {
				continue
			}
			clash = true
			if round < 2 {
				out[i].ID = out[i].Plugin + ":" + out[i].Dir
			} else {
				out[i].ID = out[i].PluginID + ":" + out[i].Dir
			}
		}
		if !clash || round >= 2 {
			break
		}
	}
	return out
}

// Find returns the skill with this id.
func Find(catalog []Skill, id string) (Skill, bool) {
	for _, s := range catalog {
		if s.ID == id {
			return s, true
		}
	}
	return Skill{}, false
}
