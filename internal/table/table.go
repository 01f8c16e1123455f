// Package table prints the project's command-line tables: agentlab's, the
// virtual device tool's and agentosd ctl's all look the same (tablewriter,
// boxed, long cells wrapped).
package table

import (
	"io"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/tw"
)

// Write prints header and rows as one table. widths, when given, caps the
// width of the columns it names (column index → characters).
func Write(w io.Writer, header []string, rows [][]string, widths ...map[int]int) error {
	opts := []tablewriter.Option{
		tablewriter.WithRowAutoWrap(tw.WrapNormal),
		tablewriter.WithTrimSpace(tw.Off),
	}
	if len(widths) > 0 && len(widths[0]) > 0 {
		m := tw.NewMapper[int, int]()
		for col, n := range widths[0] {
			m.Set(col, n)
		}
		opts = append(opts, tablewriter.WithColumnWidths(m))
	}
	t := tablewriter.NewTable(w, opts...)
	t.Header(header)
	if err := t.Bulk(rows); err != nil {
		return err
	}
	return t.Render()
}
