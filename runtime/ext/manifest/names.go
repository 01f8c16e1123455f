package manifest

import (
	"sort"
	"strings"
)

// ReservedPrefix starts the names of user-configured MCP servers
// ("user.<name>"); no installed or imported plugin may use it.
const ReservedPrefix = "user."

// Claim is one plugin claiming a name.
type Claim struct {
	// ID is the registry id, "<package>/<dir>".
	ID   string
	Name string
	// Builtin is true for AgentOS's own plugins.
	Builtin bool
}

// Names is the outcome of ResolveNames.
type Names struct {
	// Owner maps each name to the id of the plugin that holds it.
	Owner map[string]string
	// Conflicts are the ids that lost (status UNAVAILABLE, NAME_CONFLICT),
	// sorted.
	Conflicts []string
}

// ResolveNames decides which plugin holds each name (spec §6.4): a
// built-in plugin beats all others; then the plugin that already owned
// the name (previous, name → id, from the persisted registry); then the
// smaller id. A non-built-in plugin whose name starts with "user." always
// loses. Ties among built-ins go to the smaller id. A claim repeating an
// earlier claim's id is ignored.
func ResolveNames(claims []Claim, previous map[string]string) Names {
	groups := map[string][]Claim{}
	seen := map[string]bool{}
	out := Names{Owner: map[string]string{}}
	for _, c := range claims {
		if seen[c.ID] {
			continue
		}
		seen[c.ID] = true
		if !c.Builtin && strings.HasPrefix(c.Name, ReservedPrefix) {
			out.Conflicts = append(out.Conflicts, c.ID)
			continue
		}
		groups[c.Name] = append(groups[c.Name], c)
	}
	for name, g := range groups {
		winner := g[0]
		for _, c := range g[1:] {
			if better(c, winner, previous[name]) {
				winner = c
			}
		}
		out.Owner[name] = winner.ID
		for _, c := range g {
			if c.ID != winner.ID {
				out.Conflicts = append(out.Conflicts, c.ID)
			}
		}
	}
	sort.Strings(out.Conflicts)
	return out
}

// better reports whether a beats b for a name previously owned by prev.
func better(a, b Claim, prev string) bool {
	if a.Builtin != b.Builtin {
		return a.Builtin
	}
	if !a.Builtin && prev != "" && (a.ID == prev) != (b.ID == prev) {
		return a.ID == prev
	}
	return a.ID < b.ID
}
