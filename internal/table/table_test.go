package table

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestWrite(t *testing.T) {
	var b bytes.Buffer
	require.NoError(t, Write(&b, []string{"package", "uid"}, [][]string{{"com.example.notes", "10042"}, {"<b>x</b>", ""}}))
	out := b.String()
	// Every cell is printed as given, with no markup interpreted.
	for _, s := range []string{"PACKAGE", "UID", "com.example.notes", "10042", "<b>x</b>"} {
		assert.Contains(t, out, s)
	}
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	require.GreaterOrEqual(t, len(lines), 5, out) // top, header, rule, 2 rows, bottom
	for _, l := range lines[1:] {
		assert.Equal(t, len([]rune(lines[0])), len([]rune(l)), "every line as wide as the box:\n%s", out)
	}
}

func TestWriteWraps(t *testing.T) {
	var b bytes.Buffer
	long := strings.Repeat("word ", 20)
	require.NoError(t, Write(&b, []string{"a", "b"}, [][]string{{"x", long}}, map[int]int{1: 20}))
	for _, l := range strings.Split(strings.TrimRight(b.String(), "\n"), "\n") {
		assert.LessOrEqual(t, len([]rune(l)), 40, "column 1 is capped at 20 characters:\n%s", b.String())
	}
}
