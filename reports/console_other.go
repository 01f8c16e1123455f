//go:build !unix

package reports

import "os"

// terminalWidth is unknown here; the default width applies.
func terminalWidth(*os.File) int { return 0 }
