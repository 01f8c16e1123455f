package wire

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// Large results (upstream's Binder-size workaround, kept because a frame
// and a model's context are bounded too). A text result over
// MaxResultChars is cut to that many characters plus a marker, flagged
// "truncated", and its full value is attached gzip-compressed as
// "<key>_gz" with its length as "<key>_len" when the compressed bytes
// are at most MaxGzipBytes. A controller finds attachments by these
// fields (Expand), never by the capability's name.
const (
	// MaxResultChars is the longest text kept inline, in UTF-16 code
	// units (what upstream's String.length counts).
	MaxResultChars = 150_000
	// MaxGzipBytes is the largest attachment.
	MaxGzipBytes = 900_000
	// MaxBodyBytes is the largest declared HTTP body a callee reads: a
	// Content-Length above it is skipped unread.
	MaxBodyBytes = 2_000_000
	// MaxExpandBytes bounds a decompressed attachment (a gzip bomb stops there).
	MaxExpandBytes = 32 << 20
)

// Result keys of the large-result rules.
const (
	KeyTruncated = "truncated"
	SuffixGzip   = "_gz"
	SuffixLen    = "_len"
)

// Marker is the text appended to a cut value: total is the full length
// in UTF-16 code units, attached whether key_gz holds the full value.
type Marker func(key string, total int, attached bool) string

// MarkerHTML is browser_read's marker (upstream's text).
func MarkerHTML(key string, total int, attached bool) string {
	if !attached {
		return MarkerText(key, total, false)
	}
	return fmt.Sprintf("\n…[内容已截断，完整 HTML 见 %s%s，共 %d 字符]", key, SuffixGzip, total)
}

// MarkerBody is http_request's marker (upstream's text).
func MarkerBody(key string, total int, attached bool) string {
	if !attached {
		return MarkerText(key, total, false)
	}
	return fmt.Sprintf("\n…[响应体已截断，完整内容见 %s%s，共 %d 字符]", key, SuffixGzip, total)
}

// MarkerText is the marker of a cut value without an attachment.
func MarkerText(_ string, total int, attached bool) string {
	if attached {
		return fmt.Sprintf("\n…[内容已截断，共 %d 字符]", total)
	}
	return fmt.Sprintf("\n…[内容已截断，共 %d 字符，完整内容过大未附带]", total)
}

// Large builds one large text result from a stream: write the text (in
// any pieces; UTF-8 sequences may be split between writes), then Put.
// Memory stays bounded whatever the length: the inline prefix (at most
// MaxResultChars characters) and the compressed attachment (at most
// MaxGzipBytes; compression stops once it is over). Nothing is
// compressed unless the text turns out too long.
type Large struct {
	key    string
	marker Marker
	gzip   bool

	prefix  []byte // the first MaxResultChars units (all of it while short)
	units   int    // UTF-16 units seen
	pending []byte // an incomplete UTF-8 sequence from the last write
	over    bool   // units > MaxResultChars

	zw     *gzip.Writer
	zbuf   capBuffer
	zwrErr error
}

// NewLarge starts a large result for key; attach says whether an over-long
// value gets the gzip attachment (upstream attaches only for browser_read
// and http_request). marker nil is MarkerText.
func NewLarge(key string, attach bool, marker Marker) *Large {
	if marker == nil {
		marker = MarkerText
	}
	return &Large{key: key, marker: marker, gzip: attach}
}

// Write adds text.
func (l *Large) Write(p []byte) (int, error) {
	n := len(p)
	if len(l.pending) > 0 {
		// Complete the sequence split by the last write first.
		need := min(utf8.UTFMax-len(l.pending), len(p))
		joined := append(append([]byte{}, l.pending...), p[:need]...)
		if !utf8.FullRune(joined) && need == len(p) {
			l.pending = joined
			return n, nil
		}
		_, size := utf8.DecodeRune(joined)
		used := size - len(l.pending)
		if used < 0 {
			used = 0 // the pending byte alone was invalid
			size = len(l.pending)
		}
		l.add(joined[:size])
		l.pending = l.pending[:0]
		p = p[used:]
	}
	// Keep a trailing incomplete sequence for the next write.
	cut := len(p)
	for i := len(p) - 1; i >= 0 && i >= len(p)-utf8.UTFMax+1; i-- {
		if utf8.RuneStart(p[i]) {
			if !utf8.FullRune(p[i:]) {
				cut = i
			}
			break
		}
	}
	l.add(p[:cut])
	l.pending = append(l.pending[:0], p[cut:]...)
	return n, nil
}

// add takes whole UTF-8 text (invalid bytes count one unit each).
func (l *Large) add(p []byte) {
	if len(p) == 0 {
		return
	}
	if !l.over {
		// Find where the inline prefix ends within p.
		i := 0
		for i < len(p) {
			r, size := utf8.DecodeRune(p[i:])
			u := 1
			if r >= 0x10000 {
				u = 2
			}
			if l.units+u > MaxResultChars {
				l.over = true
				break
			}
			l.units += u
			i += size
		}
		l.prefix = append(l.prefix, p[:i]...)
		if !l.over {
			return
		}
		// Too long: from here the whole text goes to the attachment.
		if l.gzip {
			l.zw, _ = gzip.NewWriterLevel(&l.zbuf, gzip.BestSpeed)
			l.compress(l.prefix)
		}
		p = p[i:]
	}
	l.units += utf16Units(p)
	l.compress(p)
}

func (l *Large) compress(p []byte) {
	if l.zw == nil || l.zbuf.over {
		return
	}
	if _, err := l.zw.Write(p); err != nil {
		l.zwrErr = err
	}
}

// Put finishes the text and sets key (and truncated, key_gz, key_len)
// in b.
func (l *Large) Put(b Bundle) {
	if len(l.pending) > 0 {
		p := l.pending
		l.pending = nil
		l.add(p)
	}
	if !l.over {
		b[l.key] = String(string(l.prefix))
		b[KeyTruncated] = Bool(false)
		return
	}
	attached := false
	if l.zw != nil && l.zw.Close() == nil && l.zwrErr == nil && !l.zbuf.over && l.zbuf.b.Len() <= MaxGzipBytes {
		attached = true
		b[l.key+SuffixGzip] = Bytes(l.zbuf.b.Bytes())
		b[l.key+SuffixLen] = Int(int64(l.units))
	}
	b[l.key] = String(string(l.prefix) + l.marker(l.key, l.units, attached))
	b[KeyTruncated] = Bool(true)
}

// Chars is the length of the text so far in UTF-16 code units.
func (l *Large) Chars() int { return l.units }

// PutText sets a text result by the large-result rules.
func PutText(b Bundle, key, text string, attach bool, marker Marker) {
	l := NewLarge(key, attach, marker)
	io.WriteString(l, text)
	l.Put(b)
}

// capBuffer is a buffer that stops growing past MaxGzipBytes and says so.
type capBuffer struct {
	b    bytes.Buffer
	over bool
}

func (c *capBuffer) Write(p []byte) (int, error) {
	if c.over || c.b.Len()+len(p) > MaxGzipBytes {
		c.over = true
		return len(p), nil
	}
	return c.b.Write(p)
}

func utf16Units(p []byte) int {
	if !utf8.Valid(p) {
		return utf16UnitsSlow(p)
	}
	// Valid UTF-8: a code unit per rune start, two for a 4-byte rune.
	// Eight ASCII bytes at a time is the common case of a text body.
	n := 0
	for len(p) >= 8 {
		w := binary.LittleEndian.Uint64(p)
		if w&0x8080808080808080 == 0 {
			n += 8
			p = p[8:]
			continue
		}
		for _, c := range p[:8] {
			n += unitsOfByte(c)
		}
		p = p[8:]
	}
	for _, c := range p {
		n += unitsOfByte(c)
	}
	return n
}

// unitsOfByte is a byte's share of UTF-16 code units in valid UTF-8.
func unitsOfByte(c byte) int {
	switch {
	case c < 0x80:
		return 1
	case c < 0xC0:
		return 0 // a continuation byte
	case c < 0xF0:
		return 1
	}
	return 2
}

// utf16UnitsSlow counts text with invalid bytes, each one unit (U+FFFD).
func utf16UnitsSlow(p []byte) int {
	n := 0
	for len(p) > 0 {
		c := p[0]
		if c < utf8.RuneSelf {
			n++
			p = p[1:]
			continue
		}
		r, size := utf8.DecodeRune(p)
		if r >= 0x10000 {
			n += 2
		} else {
			n++
		}
		p = p[size:]
	}
	return n
}

// ErrAttachment is an attachment that cannot be used: not gzip, larger
// than MaxExpandBytes, or not the length "<key>_len" says.
var ErrAttachment = errors.New("aci: bad large-result attachment")

// Expand returns the full value of every text result that has an
// attachment: for each key K with bytes at K_gz, the decompressed text
// (checked against K_len when present). A bad attachment is reported and
// the preview stays the value.
func Expand(b Bundle) (map[string]string, []error) {
	var out map[string]string
	var errs []error
	for k, v := range b {
		base, ok := strings.CutSuffix(k, SuffixGzip)
		if !ok || v.Type() != TypeBytes || base == "" {
			continue
		}
		zr, err := gzip.NewReader(bytes.NewReader(v.BytesVal()))
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w: not gzip", k, ErrAttachment))
			continue
		}
		var sb strings.Builder
		n, err := io.Copy(&sb, io.LimitReader(zr, MaxExpandBytes+1))
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w: %v", k, ErrAttachment, err))
			continue
		}
		if n > MaxExpandBytes {
			errs = append(errs, fmt.Errorf("%s: %w: larger than %d bytes", k, ErrAttachment, MaxExpandBytes))
			continue
		}
		full := sb.String()
		if lv, ok := b[base+SuffixLen]; ok && lv.Type() == TypeInt && lv.IntVal() != int64(utf16Units([]byte(full))) {
			errs = append(errs, fmt.Errorf("%s: %w: %d characters, %s says %d", k, ErrAttachment, utf16Units([]byte(full)), base+SuffixLen, lv.IntVal()))
			continue
		}
		if out == nil {
			out = map[string]string{}
		}
		out[base] = full
	}
	return out, errs
}
