package cli

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/agentoslab/agentlab/lab/build"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// readmeCommand is one agentlab command line README.md shows.
type readmeCommand struct {
	line int
	args []string
	// inline commands are mentioned in prose (`agentlab report merge`):
	// they need not carry their arguments.
	inline bool
}

// placeholders stand in for what CI and the reader fill in.
var placeholders = strings.NewReplacer(
	"${{ matrix.shard }}", "0",
	"$((CI_NODE_INDEX - 1))", "0",
	"$CI_NODE_TOTAL", "4",
	"$CI_NODE_INDEX", "1",
	"<code>", "123456",
	"bash|zsh|fish", "bash",
)

var inlineCommand = regexp.MustCompile("`(agentlab [^`]+)`")

// readmeCommands finds every agentlab command line of README.md: lines of
// code blocks that run `go run ./lab/cmd/agentlab …` (shell, CI YAML), and
// inline `agentlab …` spans.
func readmeCommands(t *testing.T, text string) []readmeCommand {
	t.Helper()
	var out []readmeCommand
	inBlock := false
	for i, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			inBlock = !inBlock
			continue
		}
		if inBlock {
			if _, rest, ok := strings.Cut(line, "go run ./lab/cmd/agentlab"); ok {
				out = append(out, readmeCommand{line: i + 1, args: shellWords(t, placeholders.Replace(rest))})
			}
			continue
		}
		for _, m := range inlineCommand.FindAllStringSubmatch(line, -1) {
			out = append(out, readmeCommand{line: i + 1, args: shellWords(t, placeholders.Replace(strings.TrimPrefix(m[1], "agentlab"))), inline: true})
		}
	}
	return out
}

// shellWords splits a command line as sh would (quotes, a trailing
// comment), enough for README's commands.
func shellWords(t *testing.T, s string) []string {
	var words []string
	var cur strings.Builder
	inWord := false
	var quote rune
	for _, r := range s {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			} else {
				cur.WriteRune(r)
			}
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == '#' && !inWord:
			return append(words, splitDone(&cur, inWord)...)
		case r == ' ' || r == '\t':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if quote != 0 {
		t.Fatalf("unbalanced quote in %q", s)
	}
	return append(words, splitDone(&cur, inWord)...)
}

func splitDone(cur *strings.Builder, inWord bool) []string {
	if !inWord {
		return nil
	}
	return []string{cur.String()}
}

// TestReadmeCommands: every agentlab command line in README.md runs as
// written. `run` lines run for real with --dry-run (the selection, flags
// and repeat rules checked against the real suite, no device touched);
// scenarios validate and completion run for real; the others are parsed
// against the command tree (command, flags, arguments). A README that
// names a scenario that does not exist, a flag that was renamed or a
// command that is gone fails here.
func TestReadmeCommands(t *testing.T) {
	root, err := build.FindSource(".")
	require.NoError(t, err)
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	require.NoError(t, err)
	cmds := readmeCommands(t, string(readme))
	require.GreaterOrEqual(t, len(cmds), 10, "README's agentlab commands were not found")
	t.Chdir(root) // the default configuration's suite is ./scenarios
	out := t.TempDir()
	for _, c := range cmds {
		require.NotEmpty(t, c.args, "README.md:%d", c.line)
		where := "README.md:" + strconv.Itoa(c.line) + ": agentlab " + strings.Join(c.args, " ")
		switch {
		case c.args[0] == "run":
			r := runCLI(t, append(append([]string{"--out", out}, c.args...), "--dry-run")...)
			assert.Equal(t, 0, r.code, "%s\n%s", where, r.stderr)
		case c.args[0] == "completion" && len(c.args) > 1,
			c.args[0] == "scenarios" && len(c.args) > 1 && c.args[1] == "validate":
			r := runCLI(t, c.args...)
			assert.Equal(t, 0, r.code, "%s\n%s", where, r.stderr)
		default:
			assert.NoError(t, parseOnly(c.args, !c.inline), where)
		}
	}
}

// parseOnly checks args against the command tree without running them.
func parseOnly(args []string, checkArgs bool) error {
	a := &app{stdout: &strings.Builder{}, stderr: &strings.Builder{}}
	root := newRoot(a)
	cmd, rest, err := root.Find(args)
	if err != nil {
		return err
	}
	if cmd == root {
		return unknownCommand(root, args[0])
	}
	if err := cmd.ParseFlags(rest); err != nil {
		return err
	}
	if !checkArgs {
		return nil
	}
	return cmd.ValidateArgs(cmd.Flags().Args())
}

// TestReadmeCommandsFound pins the extraction itself: a code line, a CI
// line with placeholders and quotes, an inline span.
func TestReadmeCommandsFound(t *testing.T) {
	text := "Run `agentlab report diff OLD NEW` and\n\n```sh\ngo run ./lab/cmd/agentlab run --scenario 'desktop/*'   # one area\n```\n" +
		"```yaml\n      - run: go run ./lab/cmd/agentlab run --shard ${{ matrix.shard }}/4 --out \"out/shard x\"\n```\n"
	got := readmeCommands(t, text)
	require.Len(t, got, 3)
	assert.Equal(t, []string{"report", "diff", "OLD", "NEW"}, got[0].args)
	assert.True(t, got[0].inline)
	assert.Equal(t, []string{"run", "--scenario", "desktop/*"}, got[1].args)
	assert.Equal(t, []string{"run", "--shard", "0/4", "--out", "out/shard x"}, got[2].args)
	assert.Error(t, parseOnly([]string{"run", "--scenarios", "x"}, true), "a misspelt flag")
	assert.Error(t, parseOnly([]string{"reprot"}, true), "a misspelt command")
	assert.Error(t, parseOnly([]string{"report", "diff", "one"}, true), "a missing argument")
}
