package script

import "github.com/agentoslab/agentlab/runtime/catalog"

// resolveRaw is the one place a raw [plugin, server, tool] becomes the
// final name a script calls (spec §7, as scripted_tools.py does it): the
// plain name if the request offers it, else the forced-suffix candidate
// that is offered (the tool collided with another), else the plain name,
// so a script can call an out-of-scope tool on purpose.
func resolveRaw(plugin, server, tool string, offered map[string]bool) string {
	cands := catalog.Candidates(catalog.ToolID{Plugin: plugin, Server: server, Tool: tool})
	for _, c := range cands {
		if offered[c] {
			return c
		}
	}
	return cands[0]
}
