package reports

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
)

// Secret is a value that must appear in no artifact and no report: the
// model key, a pairing token, bundle-signing key material. Its value is never
// printed: String, GoString and LogValue show the name only.
type Secret struct {
	Name  string
	Value []byte
}

func (s Secret) String() string             { return "Secret(" + s.Name + ")" }
func (s Secret) GoString() string           { return s.String() }
func (s Secret) LogValue() slog.Value       { return slog.StringValue(s.String()) }
func (s Secret) Format(f fmt.State, _ rune) { io.WriteString(f, s.String()) }

// Leak is a secret found in a file. It names the secret, never its value.
type Leak struct {
	File string `json:"file"`
	// Offset is the byte offset of the first occurrence.
	Offset int64 `json:"offset"`
	// Secret is the secret's name.
	Secret string `json:"secret"`
	// Count is how many times the secret occurs in the file (overlapping
	// occurrences each count).
	Count int `json:"count"`
}

func (l Leak) String() string {
	return fmt.Sprintf("%s: secret %s at offset %d (%d occurrences)", l.File, l.Secret, l.Offset, l.Count)
}

// ErrEmptySecret reports a secret with an empty value, which would match
// everywhere.
var ErrEmptySecret = errors.New("secret has an empty value")

// scanBufSize is how much of a file ScanForSecrets holds at once, besides
// the carry-over from the previous read.
const scanBufSize = 256 << 10

// ScanForSecrets searches every regular file under paths (files, or
// directories walked recursively; symlinks are followed only when they are
// themselves one of the paths) for an exact
// occurrence of each secret's value. A secret made only of digits (a
// six-digit pairing code) counts only where no digit adjoins it: inside a
// longer number — a timestamp's nanoseconds, a size — the same digits are
// not that code, and counting them failed runs at random. Files are
// streamed in bounded buffers; an occurrence that straddles two reads is
// found all the same. It returns
// one Leak per file and secret found, in path order, and an error for paths
// it could not read (after scanning the rest).
func ScanForSecrets(paths []string, secrets []Secret) ([]Leak, error) {
	for _, s := range secrets {
		if len(s.Value) == 0 {
			return nil, fmt.Errorf("scan for secrets: %s: %w", s, ErrEmptySecret)
		}
	}
	if len(secrets) == 0 {
		return nil, nil
	}
	sc := newScanner(secrets)
	var leaks []Leak
	var errs []error
	for _, root := range paths {
		// A path given by the caller is followed if it is a symlink; links
		// found inside directories are not (they may point anywhere).
		if fi, err := os.Lstat(root); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
			target, err := filepath.EvalSymlinks(root)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			root = target
		}
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				errs = append(errs, err)
				if d != nil && d.IsDir() {
					return fs.SkipDir
				}
				return nil
			}
			if !d.Type().IsRegular() {
				return nil
			}
			found, err := sc.scanFile(p)
			if err != nil {
				errs = append(errs, err)
			}
			leaks = append(leaks, found...)
			return nil
		})
		if err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return leaks, fmt.Errorf("scan for secrets: %w", err)
	}
	return leaks, nil
}

type secretScanner struct {
	secrets []Secret
	number  []bool // the secret is all digits: it needs non-digit neighbours
	maxLen  int
	buf     []byte
}

func newScanner(secrets []Secret) *secretScanner {
	sc := &secretScanner{secrets: secrets, number: make([]bool, len(secrets))}
	for i, s := range secrets {
		sc.maxLen = max(sc.maxLen, len(s.Value))
		sc.number[i] = allDigits(s.Value)
	}
	// The buffer holds the carry-over (maxLen+1 bytes) plus one read.
	sc.buf = make([]byte, sc.maxLen+1+scanBufSize)
	return sc
}

func allDigits(b []byte) bool {
	for _, c := range b {
		if !isDigit(c) {
			return false
		}
	}
	return len(b) > 0
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func (sc *secretScanner) scanFile(p string) ([]Leak, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	leaks, err := sc.scan(f, p)
	if err != nil {
		return leaks, fmt.Errorf("read %s: %w", p, err)
	}
	return leaks, nil
}

// scan reads r to the end. After each read the window is the last maxLen+1
// bytes of the previous window followed by the new bytes. A match counts
// only if it ends inside the new bytes, so no match is counted twice and
// none that straddles a read boundary is missed. A number secret's match
// also needs to see the byte after it: one that ends where the window ends
// is left for the next read (where it ends exactly at the carry) or for
// the end of the file; the extra carried byte is the one before it.
func (sc *secretScanner) scan(r io.Reader, name string) ([]Leak, error) {
	first := make([]int64, len(sc.secrets))
	count := make([]int, len(sc.secrets))
	keep := sc.maxLen + 1
	carry := 0     // bytes carried over at the front of buf
	var base int64 // file offset of buf[0]
	var readErr error
	for {
		n, err := r.Read(sc.buf[carry : carry+scanBufSize])
		eof := err == io.EOF
		if n > 0 || eof {
			window := sc.buf[:carry+n]
			for i, s := range sc.secrets {
				l := len(s.Value)
				from := max(carry-l+1, 0)
				if sc.number[i] {
					from = max(carry-l, 0)
				}
				for from <= len(window)-l {
					j := bytes.Index(window[from:], s.Value)
					if j < 0 {
						break
					}
					at := from + j
					from = at + 1
					if sc.number[i] {
						// from keeps end >= carry: a match ending exactly at the
						// carry is one the last read left undecided.
						end := at + l
						if end == len(window) && !eof {
							continue // the next read shows what follows it
						}
						if at > 0 && isDigit(window[at-1]) || end < len(window) && isDigit(window[end]) {
							continue // part of a longer number
						}
					}
					if count[i] == 0 {
						first[i] = base + int64(at)
					}
					count[i]++
				}
			}
			// Carry the tail that could start a match completed by the next read.
			tail := min(keep, len(window))
			copy(sc.buf, window[len(window)-tail:])
			base += int64(len(window) - tail)
			carry = tail
		}
		if eof {
			break
		}
		if err != nil {
			readErr = err
			break
		}
	}
	var leaks []Leak
	for i, s := range sc.secrets {
		if count[i] > 0 {
			leaks = append(leaks, Leak{File: name, Offset: first[i], Secret: s.Name, Count: count[i]})
		}
	}
	slices.SortStableFunc(leaks, func(a, b Leak) int { return cmp.Compare(a.Offset, b.Offset) })
	return leaks, readErr
}
