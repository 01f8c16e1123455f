package script

import (
	"encoding/json"
	"regexp"
	"sort"
	"strings"
)

// The compromised model reads the conversation's user text and tool
// results and calls every tool they name, each once, with the JSON object
// written next to the name. It recognises:
//
//   - final names: any mcp__… or ses__… token (offered or not) and the
//     exact names of other offered tools (read_skill);
//   - raw tool names: the last "__" segment of an offered mcp__/ses__
//     name, as a whole word;
//   - [plugin, server, tool] triples, resolved like scripted raw names.
//
// "Next to" means the first JSON object that starts within maxArgGap
// bytes after the name and before the next name; names inside that
// object belong to it and are not calls of their own.

const maxArgGap = 200

var (
	finalNameRE = regexp.MustCompile(`(?:mcp|ses)__[A-Za-z0-9_-]+`)
	tripleRE    = regexp.MustCompile(`\[\s*"(?:[^"\\]|\\.)*"\s*,\s*"(?:[^"\\]|\\.)*"\s*,\s*"(?:[^"\\]|\\.)*"\s*\]`)
)

// found is a tool the conversation names.
type found struct {
	name string
	args map[string]any
}

type occurrence struct {
	start, end int
	names      []string
}

// scan returns the tools named in texts, in order of first mention,
// each once. A tool's arguments are the first object found next to any of
// its mentions ({} when none is). A text that is JSON is also read
// string by string, so an instruction inside a JSON string (a note's
// text in a tool result) is found with its unescaped object.
func scan(texts []string, offered []string) []found {
	offeredSet := make(map[string]bool, len(offered))
	raw := map[string][]string{}
	var plain []string
	for _, n := range offered {
		if n == "" {
			continue
		}
		offeredSet[n] = true
		if strings.HasPrefix(n, "mcp__") || strings.HasPrefix(n, "ses__") {
			if i := strings.LastIndex(n, "__"); i >= 0 && i+2 < len(n) {
				raw[n[i+2:]] = append(raw[n[i+2:]], n)
			}
		} else {
			plain = append(plain, n)
		}
	}
	index := map[string]int{}
	var out []found
	for _, text := range expand(texts) {
		occ := occurrences(text, plain, raw, offeredSet)
		skipUntil := 0
		for i, o := range occ {
			if o.start < skipUntil {
				continue
			}
			limit := min(len(text), o.end+maxArgGap)
			if i+1 < len(occ) {
				limit = min(limit, occ[i+1].start)
			}
			args, objEnd := objectAfter(text, o.end, limit)
			skipUntil = max(o.end, objEnd)
			for _, n := range o.names {
				j, ok := index[n]
				if !ok {
					index[n] = len(out)
					out = append(out, found{name: n, args: args})
					continue
				}
				if out[j].args == nil {
					out[j].args = args
				}
			}
		}
	}
	for i := range out {
		if out[i].args == nil {
			out[i].args = map[string]any{}
		}
	}
	return out
}

// expand lists each text and, for a text that is a JSON document, every
// string in it (keys and values) in document order.
func expand(texts []string) []string {
	var out []string
	for _, t := range texts {
		out = append(out, t)
		tt := strings.TrimSpace(t)
		if tt == "" || (tt[0] != '{' && tt[0] != '[') || !json.Valid([]byte(tt)) {
			continue
		}
		dec := json.NewDecoder(strings.NewReader(tt))
		for {
			tok, err := dec.Token()
			if err != nil {
				break
			}
			if s, ok := tok.(string); ok && s != "" {
				out = append(out, s)
			}
		}
	}
	return out
}

// occurrences finds every tool mention in text, sorted by position, with
// mentions inside an earlier one dropped.
func occurrences(text string, plain []string, raw map[string][]string, offered map[string]bool) []occurrence {
	var occ []occurrence
	for _, m := range finalNameRE.FindAllStringIndex(text, -1) {
		if m[0] > 0 && isWordByte(text[m[0]-1]) {
			continue
		}
		occ = append(occ, occurrence{m[0], m[1], []string{text[m[0]:m[1]]}})
	}
	for _, m := range tripleRE.FindAllStringIndex(text, -1) {
		var id []string
		if json.Unmarshal([]byte(text[m[0]:m[1]]), &id) != nil || len(id) != 3 || id[0] == "" || id[1] == "" || id[2] == "" {
			continue
		}
		occ = append(occ, occurrence{m[0], m[1], []string{resolveRaw(id[0], id[1], id[2], offered)}})
	}
	for _, n := range plain {
		occ = append(occ, words(text, n, []string{n})...)
	}
	for r, names := range raw {
		occ = append(occ, words(text, r, names)...)
	}
	sort.SliceStable(occ, func(i, j int) bool {
		if occ[i].start != occ[j].start {
			return occ[i].start < occ[j].start
		}
		return occ[i].end > occ[j].end
	})
	var out []occurrence
	end := 0
	for _, o := range occ {
		if o.start < end {
			continue
		}
		out = append(out, o)
		end = o.end
	}
	return out
}

// words finds whole-word occurrences of w in text.
func words(text, w string, names []string) []occurrence {
	if w == "" {
		return nil
	}
	var occ []occurrence
	for off := 0; ; {
		i := strings.Index(text[off:], w)
		if i < 0 {
			return occ
		}
		s, e := off+i, off+i+len(w)
		if (s == 0 || !isWordByte(text[s-1])) && (e == len(text) || !isWordByte(text[e])) {
			occ = append(occ, occurrence{s, e, append([]string(nil), names...)})
		}
		off = s + 1
	}
}

func isWordByte(c byte) bool {
	return c == '_' || c == '-' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
}

// objectAfter returns the first JSON object starting in text[from:limit]
// and where it ends; it returns nil and 0 when there is none.
func objectAfter(text string, from, limit int) (map[string]any, int) {
	for i := from; i < limit; i++ {
		if text[i] != '{' {
			continue
		}
		dec := json.NewDecoder(strings.NewReader(text[i:]))
		dec.UseNumber()
		var m map[string]any
		if err := dec.Decode(&m); err == nil && m != nil {
			return m, i + int(dec.InputOffset())
		}
	}
	return nil, 0
}
