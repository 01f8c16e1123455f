package scenarios

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"

	"github.com/agentoslab/agentlab/lab/scenario"
	"github.com/agentoslab/agentlab/sampleapps/browser"
	"github.com/agentoslab/agentlab/sampleapps/browser/service"
)

// browserToolPrefix is the catalog's name prefix of the browser's ACI tools.
const browserToolPrefix = "aci__org_agentos_sample_browser__browser__"

// notAModelTool are capabilities the runtime uses itself, never offered
// to a model (the protocol is negotiated at discovery).
var notAModelTool = map[string]bool{"aci_protocol": true}

// browserRow is a row of README.md's ACI table.
type browserRow struct {
	scenario string
	checks   []string
}

var browserRowRE = regexp.MustCompile("^\\| `([a-z_]+)` \\| `([a-z0-9/-]+)` \\| (.+) \\|$")

// readBrowserTable parses the rows between the aci-browser markers.
func readBrowserTable(doc string) (map[string]browserRow, error) {
	_, rest, ok := strings.Cut(doc, "<!-- aci-browser:begin -->")
	body, _, ok2 := strings.Cut(rest, "<!-- aci-browser:end -->")
	if !ok || !ok2 {
		return nil, os.ErrNotExist
	}
	rows := map[string]browserRow{}
	for line := range strings.SplitSeq(body, "\n") {
		m := browserRowRE.FindStringSubmatch(strings.TrimSpace(line))
		if m == nil {
			continue
		}
		var checks []string
		for c := range strings.SplitSeq(m[3], ",") {
			checks = append(checks, strings.Trim(strings.TrimSpace(c), "`"))
		}
		rows[m[1]] = browserRow{scenario: m[2], checks: checks}
	}
	return rows, nil
}

// scriptToolNames are the tool names the scenario's model scripts call
// (its scripts and its inline model script), read from its file.
func scriptToolNames(t *testing.T, s *scenario.Scenario) map[string]bool {
	t.Helper()
	raw, err := os.ReadFile(s.File)
	require.NoError(t, err)
	var doc any
	require.NoError(t, yaml.Unmarshal(raw, &doc), s.File)
	out := map[string]bool{}
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if calls, ok := v["toolCalls"].([]any); ok {
				for _, c := range calls {
					if m, ok := c.(map[string]any); ok {
						if n, ok := m["name"].(string); ok {
							out[n] = true
						}
					}
				}
			}
			for _, x := range v {
				walk(x)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	for k, v := range doc.(map[string]any) {
		if k == "scripts" || k == "model" {
			walk(v)
		}
	}
	return out
}

// TestBrowserCapabilitiesCovered: upstream counted its device calls by
// hand (42/42: the browser's 30, WorkflowACI's 10, the main app's 2).
// Here every capability the browser declares has a row in README.md's
// ACI table naming a scenario whose model script calls it (aci_protocol:
// negotiated at discovery) and checks of that scenario that exist.
func TestBrowserCapabilitiesCovered(t *testing.T) {
	doc, err := os.ReadFile(readmePath)
	require.NoError(t, err)
	rows, err := readBrowserTable(string(doc))
	require.NoError(t, err, "README.md has no aci-browser table")
	byName := map[string]*scenario.Scenario{}
	for _, s := range loadSuite(t) {
		byName[s.Name] = s
	}
	caps := service.Capabilities(browser.New(nil))
	require.GreaterOrEqual(t, len(caps), 30, "upstream's browser had 30 capabilities")
	var ids []string
	for _, c := range caps {
		id := c.ID()
		ids = append(ids, id)
		row, ok := rows[id]
		if !assert.True(t, ok, "README.md's ACI table has no row for %s", id) {
			continue
		}
		s := byName[row.scenario]
		if !assert.NotNil(t, s, "%s: no scenario %s", id, row.scenario) {
			continue
		}
		if !notAModelTool[id] {
			assert.True(t, scriptToolNames(t, s)[browserToolPrefix+id], "%s: %s's scripts never call it", id, row.scenario)
		}
		var names []string
		for _, c := range s.Checks {
			names = append(names, c.Name)
		}
		for _, c := range row.checks {
			assert.Contains(t, names, c, "%s: %s has no check %s", id, row.scenario, c)
		}
	}
	for id := range rows {
		assert.True(t, slices.Contains(ids, id), "README.md's ACI table lists %s, which the browser does not declare", id)
	}
}
