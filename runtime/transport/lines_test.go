package transport

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
)

func TestLineReader(t *testing.T) {
	smile := "😀" // one rune, two UTF-16 units
	tests := []struct {
		name  string
		in    string
		max   int
		lines []string
		err   error
	}{
		{"lf", "a\nb\n", 0, []string{"a", "b"}, io.EOF},
		{"crlf", "a\r\nb\r\n", 0, []string{"a", "b"}, io.EOF},
		{"last line without newline", "a\nb", 0, []string{"a", "b"}, io.EOF},
		{"empty lines kept", "\n\nx\n", 0, []string{"", "", "x"}, io.EOF},
		{"exactly at limit", strings.Repeat("x", 8) + "\n", 8, []string{strings.Repeat("x", 8)}, io.EOF},
		{"one over", strings.Repeat("x", 9) + "\n", 8, nil, ErrLineTooLong},
		{"one over without newline", strings.Repeat("x", 9), 8, nil, ErrLineTooLong},
		{"surrogate pairs count two", strings.Repeat(smile, 4) + "\n", 8, []string{strings.Repeat(smile, 4)}, io.EOF},
		{"surrogate pair over", strings.Repeat(smile, 4) + "x\n", 8, nil, ErrLineTooLong},
		{"CJK counts one", strings.Repeat("笔", 8) + "\n", 8, []string{strings.Repeat("笔", 8)}, io.EOF},
		{"CR not counted", strings.Repeat("x", 8) + "\r\n", 8, []string{strings.Repeat("x", 8)}, io.EOF},
		{"good line then too long", "ok\n" + strings.Repeat("y", 20) + "\n", 8, []string{"ok"}, ErrLineTooLong},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lr := NewLineReader(strings.NewReader(tt.in), tt.max)
			var got []string
			var err error
			for {
				var line []byte
				line, err = lr.ReadLine()
				if err != nil {
					break
				}
				got = append(got, string(line))
			}
			if !errors.Is(err, tt.err) {
				t.Fatalf("err = %v, want %v", err, tt.err)
			}
			if strings.Join(got, "|") != strings.Join(tt.lines, "|") {
				t.Fatalf("lines = %q, want %q", got, tt.lines)
			}
		})
	}
}

func TestLineReaderDefaultLimitIsSpec(t *testing.T) {
	ok := strings.Repeat("a", MaxLineChars) + "\n"
	lr := NewLineReader(strings.NewReader(ok+strings.Repeat("b", MaxLineChars+1)+"\n"), 0)
	if line, err := lr.ReadLine(); err != nil || len(line) != MaxLineChars {
		t.Fatalf("65,536-char line: len %d, err %v", len(line), err)
	}
	if _, err := lr.ReadLine(); !errors.Is(err, ErrLineTooLong) {
		t.Fatalf("65,537-char line: err %v", err)
	}
}

// endless never ends a line; the reader must give up without buffering it all.
type endless struct{ n int }

func (e *endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'z'
	}
	e.n += len(p)
	return len(p), nil
}

func TestLineReaderBoundsMemory(t *testing.T) {
	src := &endless{}
	lr := NewLineReader(src, 1000)
	if _, err := lr.ReadLine(); !errors.Is(err, ErrLineTooLong) {
		t.Fatalf("err = %v", err)
	}
	if src.n > 3*1000+2+64*1024 {
		t.Fatalf("read %d bytes of one endless line", src.n)
	}
}

func TestUTF16Len(t *testing.T) {
	for s, want := range map[string]int{"": 0, "abc": 3, "笔记": 2, "😀": 2, "a😀b": 4, "\xff\xfe": 2} {
		if got := UTF16Len([]byte(s)); got != want {
			t.Errorf("UTF16Len(%q) = %d, want %d", s, got, want)
		}
		if got := UTF16LenString(s); got != want && s != "\xff\xfe" {
			t.Errorf("UTF16LenString(%q) = %d, want %d", s, got, want)
		}
	}
}

func FuzzLineReader(f *testing.F) {
	f.Add([]byte("a\nb\r\n"), 4)
	f.Add([]byte("😀😀\n"), 3)
	f.Add([]byte(strings.Repeat("x", 40)), 16)
	f.Fuzz(func(t *testing.T, in []byte, max int) {
		if max <= 0 || max > 4096 {
			max = 16
		}
		lr := NewLineReader(bytes.NewReader(in), max)
		total := 0
		for {
			line, err := lr.ReadLine()
			if err != nil {
				if !errors.Is(err, io.EOF) && !errors.Is(err, ErrLineTooLong) {
					t.Fatalf("unexpected error %v", err)
				}
				return
			}
			if UTF16Len(line) > max {
				t.Fatalf("line of %d units passed a limit of %d", UTF16Len(line), max)
			}
			if bytes.IndexByte(line, '\n') >= 0 {
				t.Fatal("line contains a newline")
			}
			total += len(line)
			if total > len(in) {
				t.Fatal("more bytes out than in")
			}
		}
	})
}
