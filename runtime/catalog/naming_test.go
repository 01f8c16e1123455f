package catalog

import (
	"bufio"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"os"
	"regexp"
	"strings"
	"testing"
)

var finalNameRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// TestNamingGolden loads every line of the spec's naming vectors
// (testdata/tool_naming_golden.jsonl, copied from the shared spec) and
// checks Assign, and for one-tool catalogs NameOf, against them.
func TestNamingGolden(t *testing.T) {
	f, err := os.Open("testdata/tool_naming_golden.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	lines := 0
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		lines++
		var v struct {
			Catalog [][3]string `json:"catalog"`
			Names   []string    `json:"names"`
		}
		if err := json.Unmarshal([]byte(line), &v); err != nil {
			t.Fatalf("line %d: %v", lines, err)
		}
		if len(v.Catalog) != len(v.Names) {
			t.Fatalf("line %d: %d tools, %d names", lines, len(v.Catalog), len(v.Names))
		}
		ids := make([]ToolID, len(v.Catalog))
		for i, c := range v.Catalog {
			ids[i] = ToolID{Plugin: c[0], Server: c[1], Tool: c[2]}
		}
		got, err := Assign(ids)
		if err != nil {
			t.Fatalf("line %d: Assign: %v", lines, err)
		}
		for i, id := range ids {
			if got[id] != v.Names[i] {
				t.Errorf("line %d: Assign(%q) = %q, want %q", lines, id, got[id], v.Names[i])
			}
			if len(ids) == 1 && NameOf(id) != v.Names[i] {
				t.Errorf("line %d: NameOf(%q) = %q, want %q", lines, id, NameOf(id), v.Names[i])
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if lines != 11 {
		t.Fatalf("read %d vectors, the spec file has 11", lines)
	}
}

func TestSanitize(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"alarm_create", "alarm_create"},
		{"a-b_C9", "a-b_C9"},
		{"com.example.notes", "com_example_notes"},
		{"s x", "s_x"},
		{"a.b/c", "a_b_c"},
		{"笔记本工具", "_____"},   // one '_' per BMP char
		{"😀x", "__x"},        // astral char = surrogate pair = two '_'
		{"é", "_"},           // U+00E9 is one UTF-16 unit
		{"e\u0301", "e_"},    // combining mark is its own unit
		{"\x00\t\n", "___"},  // controls are replaced, never deleted
		{"\xff\xfe", "__"},   // each invalid byte is one unit
		{"", "_"},            // empty segment
		{"\U0010FFFF", "__"}, // last code point, astral
		{"\uFFFF", "_"},      // last BMP code point
		{"ﾃｽﾄ", "___"},       // half-width katakana, BMP
		{"A:B", "A_B"},
	}
	for _, tt := range tests {
		if got := Sanitize(tt.in); got != tt.want {
			t.Errorf("Sanitize(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestNameOfAndCandidates(t *testing.T) {
	t.Parallel()
	id := ToolID{"p", "s", strings.Repeat("t", 54)}
	// Hash prefix of "p\x00s\x00"+"t"*54 from the spec's worked example.
	want := []string{
		"mcp__p__s__" + strings.Repeat("t", 46) + "_b786d6",
	}
	c := Candidates(id)
	if len(c) != 1+len(SuffixLengths) {
		t.Fatalf("Candidates gave %d names", len(c))
	}
	if c[0] != want[0] || NameOf(id) != want[0] {
		t.Errorf("NameOf = %q, Candidates[0] = %q, want %q", NameOf(id), c[0], want[0])
	}
	for i, l := range SuffixLengths {
		name := c[i+1]
		if len(name) != MaxNameLen {
			t.Errorf("L=%d: %q is %d chars, want 64", l, name, len(name))
		}
		if !strings.HasPrefix(name[MaxNameLen-l:], "b786d6") || name[MaxNameLen-l-1] != '_' {
			t.Errorf("L=%d: %q does not end in _<hash>", l, name)
		}
	}
	short := ToolID{"a.b", "s", "t"}
	sc := Candidates(short)
	wantShort := []string{"mcp__a_b__s__t", "mcp__a_b__s__t_0b737e"}
	if sc[0] != wantShort[0] || sc[1] != wantShort[1] {
		t.Errorf("Candidates(%v)[:2] = %q, want %q", short, sc[:2], wantShort)
	}
	for _, n := range sc[2:] {
		if !strings.HasPrefix(n, "mcp__a_b__s__t_0b737e") {
			t.Errorf("forced candidate %q does not extend the 6-char one", n)
		}
	}
}

func TestAssignCollisions(t *testing.T) {
	t.Parallel()
	// "丅亠" and "丐丣" sanitize alike and their hashes share the first 6
	// hex chars (ffc48b), so both need 8: ffc48baa / ffc48b8a.
	a := ToolID{"p", "s", "丅亠"}
	b := ToolID{"p", "s", "丐丣"}
	c := ToolID{"p", "s", "丗丘"}
	tests := []struct {
		name string
		ids  []ToolID
		want map[ToolID]string
	}{
		{
			name: "spec collision example",
			ids:  []ToolID{{"a.b", "s", "t"}, {"a_b", "s", "t"}},
			want: map[ToolID]string{
				{"a.b", "s", "t"}: "mcp__a_b__s__t_0b737e",
				{"a_b", "s", "t"}: "mcp__a_b__s__t_74a108",
			},
		},
		{
			name: "unrelated tool keeps its plain name",
			ids:  []ToolID{{"a.b", "s", "t"}, {"a_b", "s", "t"}, {"alarm", "alarm", "alarm_create"}},
			want: map[ToolID]string{
				{"a.b", "s", "t"}:                  "mcp__a_b__s__t_0b737e",
				{"a_b", "s", "t"}:                  "mcp__a_b__s__t_74a108",
				{"alarm", "alarm", "alarm_create"}: "mcp__alarm__alarm__alarm_create",
			},
		},
		{
			name: "6-char suffixes collide, both go to 8",
			ids:  []ToolID{a, b},
			want: map[ToolID]string{
				a: "mcp__p__s_____ffc48baa",
				b: "mcp__p__s_____ffc48b8a",
			},
		},
		{
			name: "a forced name already taken by a unique plain name",
			// {a_b, s, t_0b737e} is literally mcp__a_b__s__t_0b737e, which
			// is what {a.b, s, t} would get with 6 chars.
			ids: []ToolID{{"a.b", "s", "t"}, {"a_b", "s", "t"}, {"a_b", "s", "t_0b737e"}},
			want: map[ToolID]string{
				{"a_b", "s", "t_0b737e"}: "mcp__a_b__s__t_0b737e",
				{"a.b", "s", "t"}:        "mcp__a_b__s__t_0b737e9b",
				{"a_b", "s", "t"}:        "mcp__a_b__s__t_74a108",
			},
		},
	}
	for _, tt := range tests {
		got, err := Assign(tt.ids)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		for id, w := range tt.want {
			if got[id] != w {
				t.Errorf("%s: %v → %q, want %q", tt.name, id, got[id], w)
			}
		}
	}
	// Three members: the two sharing ffc48b need 8 chars, the third
	// settles at 6 in the first round.
	got, err := Assign([]ToolID{a, b, c})
	if err != nil {
		t.Fatal(err)
	}
	if len(got[c]) != len("mcp__p__s____")+7 || len(got[a]) != len("mcp__p__s____")+9 {
		t.Errorf("three-way: %q %q %q", got[a], got[b], got[c])
	}
}

func TestAssignErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		ids  []ToolID
		want error
	}{
		{"duplicate", []ToolID{{"p", "s", "t"}, {"q", "s", "t"}, {"p", "s", "t"}}, ErrDuplicateTool},
		{"empty plugin", []ToolID{{"", "s", "t"}}, ErrEmptySegment},
		{"empty server", []ToolID{{"p", "", "t"}}, ErrEmptySegment},
		{"empty tool", []ToolID{{"p", "s", ""}}, ErrEmptySegment},
	}
	for _, tt := range tests {
		if _, err := Assign(tt.ids); !errors.Is(err, tt.want) {
			t.Errorf("%s: err = %v, want %v", tt.name, err, tt.want)
		}
	}
	if _, err := AssignSession([]SessionToolID{{"s", "t"}, {"s", "t"}}); !errors.Is(err, ErrDuplicateTool) {
		t.Errorf("AssignSession duplicate: %v", err)
	}
	if _, err := AssignSession([]SessionToolID{{"", "t"}}); !errors.Is(err, ErrEmptySegment) {
		t.Errorf("AssignSession empty: %v", err)
	}
	got, err := Assign(nil)
	if err != nil || len(got) != 0 {
		t.Errorf("Assign(nil) = %v, %v", got, err)
	}
}

func TestSessionNaming(t *testing.T) {
	t.Parallel()
	tests := []struct {
		id   SessionToolID
		want string
	}{
		{SessionToolID{"docs", "search"}, "ses__docs__search"},
		{SessionToolID{"my.docs", "a b"}, "ses__my_docs__a_b"},
		{SessionToolID{"s", "😀"}, "ses__s____"},
		{SessionToolID{"s", strings.Repeat("t", 56)}, "ses__s__" + strings.Repeat("t", 56)}, // exactly 64
	}
	for _, tt := range tests {
		if got := SessionNameOf(tt.id); got != tt.want {
			t.Errorf("SessionNameOf(%v) = %q, want %q", tt.id, got, tt.want)
		}
	}
	long := SessionToolID{"s", strings.Repeat("t", 57)}
	if got := SessionNameOf(long); len(got) != 64 || !strings.HasPrefix(got, "ses__s__"+strings.Repeat("t", 49)+"_") {
		t.Errorf("long session name %q", got)
	}
	// Session identity is server\x00tool: the hash differs from the plugin
	// tool with the same server and tool.
	x, y := SessionToolID{"a.b", "t"}, SessionToolID{"a_b", "t"}
	got, err := AssignSession([]SessionToolID{x, y})
	if err != nil {
		t.Fatal(err)
	}
	if got[x] == got[y] || !strings.HasPrefix(got[x], "ses__a_b__t_") || !strings.HasPrefix(got[y], "ses__a_b__t_") {
		t.Errorf("session collision: %q %q", got[x], got[y])
	}
	if c := SessionCandidates(x); c[0] != "ses__a_b__t" || c[1] != got[x] {
		t.Errorf("SessionCandidates = %q, assigned %q", c, got[x])
	}
}

// randomSegment draws from a small alphabet with characters that
// sanitize alike, so random catalogs collide often.
func randomSegment(r *rand.Rand) string {
	alphabet := []string{"a", "b", ".", "_", " ", "-", "笔", "记", "😀", "Z", "9"}
	n := 1 + r.IntN(4)
	if r.IntN(10) == 0 {
		n = 20 + r.IntN(40) // long enough to need truncation
	}
	var b strings.Builder
	for range n {
		b.WriteString(alphabet[r.IntN(len(alphabet))])
	}
	return b.String()
}

// TestAssignProperties checks, over many random catalogs, that every
// name has the final-name shape, names are unique, each is one of the
// id's Candidates, and the result does not depend on order.
func TestAssignProperties(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	for round := range 300 {
		seen := map[ToolID]bool{}
		var ids []ToolID
		for range 1 + r.IntN(40) {
			id := ToolID{randomSegment(r), randomSegment(r), randomSegment(r)}
			if !seen[id] {
				seen[id] = true
				ids = append(ids, id)
			}
		}
		got, err := Assign(ids)
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		used := map[string]ToolID{}
		for _, id := range ids {
			name := got[id]
			if !finalNameRE.MatchString(name) || !strings.HasPrefix(name, PluginPrefix) {
				t.Fatalf("round %d: %v → %q has the wrong shape", round, id, name)
			}
			if other, dup := used[name]; dup {
				t.Fatalf("round %d: %v and %v both named %q", round, id, other, name)
			}
			used[name] = id
			found := false
			for _, c := range Candidates(id) {
				found = found || c == name
			}
			if !found {
				t.Fatalf("round %d: %q is not a candidate of %v", round, name, id)
			}
		}
		shuffled := append([]ToolID(nil), ids...)
		r.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		again, err := Assign(shuffled)
		if err != nil {
			t.Fatal(err)
		}
		for id, n := range got {
			if again[id] != n {
				t.Fatalf("round %d: order changed %v: %q vs %q", round, id, n, again[id])
			}
		}
	}
}

func TestAssignSessionProperties(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(3, 4))
	for round := range 200 {
		seen := map[SessionToolID]bool{}
		var ids []SessionToolID
		for range 1 + r.IntN(30) {
			id := SessionToolID{randomSegment(r), randomSegment(r)}
			if !seen[id] {
				seen[id] = true
				ids = append(ids, id)
			}
		}
		got, err := AssignSession(ids)
		if err != nil {
			t.Fatal(err)
		}
		used := map[string]bool{}
		for _, id := range ids {
			n := got[id]
			if !finalNameRE.MatchString(n) || !strings.HasPrefix(n, SessionPrefix) ||
				strings.HasPrefix(n, PluginPrefix) || n == "read_skill" || used[n] {
				t.Fatalf("round %d: bad session name %q for %v", round, n, id)
			}
			used[n] = true
		}
	}
}

// TestAssignBirthday puts 20,000 tools with one and the same plain name
// in a catalog: 6-hex suffixes then certainly collide somewhere (24 bits,
// birthday bound ~4,800), which exercises the lengthening rounds.
func TestAssignBirthday(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("large catalog")
	}
	var ids []ToolID
	for a := 0x4e00; len(ids) < 20000; a++ {
		for b := 0x4e00; b < 0x4e00+100; b++ {
			ids = append(ids, ToolID{"p", "s", string(rune(a)) + string(rune(b))})
		}
	}
	got, err := Assign(ids)
	if err != nil {
		t.Fatal(err)
	}
	used := map[string]bool{}
	longer := 0
	for _, id := range ids {
		n := got[id]
		if used[n] {
			t.Fatalf("duplicate %q", n)
		}
		used[n] = true
		if len(n) > len("mcp__p__s____")+7 {
			longer++
		}
	}
	if longer == 0 {
		t.Fatal("no name needed more than 6 hex chars; the lengthening rounds were not exercised")
	}
}
