package cli

import (
	"github.com/agentoslab/agentlab/reports"
)

// printTable prints a table to stdout the one way every agentlab table
// looks: as the run's console report draws its own (reports.WriteTable).
func printTable(a *app, header []string, rows [][]string) error {
	return reports.WriteTable(a.stdout, header, rows)
}

// dash stands in for an empty cell.
func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
