package wire

import (
	"bytes"
	"compress/gzip"
	"crypto/rand"
	"encoding/hex"
	"io"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"unicode/utf16"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestLargeThresholds(t *testing.T) {
	b := Bundle{}
	PutText(b, "html", strings.Repeat("a", MaxResultChars), true, MarkerHTML)
	assert.Equal(t, MaxResultChars, len(b["html"].Str()), "exactly 150,000 characters stay whole")
	assert.False(t, b[KeyTruncated].BoolVal())
	assert.NotContains(t, b, "html_gz", "nothing is compressed for a short value")

	full := strings.Repeat("<p>hello</p>", MaxResultChars/12+1)
	b = Bundle{}
	PutText(b, "html", full, true, MarkerHTML)
	assert.True(t, b[KeyTruncated].BoolVal())
	assert.Equal(t, full[:MaxResultChars]+"\n…[内容已截断，完整 HTML 见 html_gz，共 "+strconv.Itoa(len(full))+" 字符]", b["html"].Str())
	assert.Equal(t, int64(len(full)), b["html_len"].IntVal())
	got, errs := Expand(b)
	require.Empty(t, errs)
	assert.Equal(t, full, got["html"])
}

// Characters are UTF-16 code units (Kotlin's String.length): an emoji is
// two, a Chinese character one, and the cut never splits either.
func TestLargeCountsUTF16(t *testing.T) {
	unit := "中😀a" // 1 + 2 + 1 units
	full := strings.Repeat(unit, MaxResultChars/4+10)
	b := Bundle{}
	PutText(b, "text", full, false, nil)
	prefix, _, ok := strings.Cut(b["text"].Str(), "\n…[")
	require.True(t, ok)
	assert.Equal(t, MaxResultChars, len(utf16.Encode([]rune(prefix))))
	assert.True(t, strings.HasPrefix(full, prefix))
	assert.Contains(t, b["text"].Str(), "共 "+strconv.Itoa(len(utf16.Encode([]rune(full))))+" 字符")
	assert.NotContains(t, b, "text_gz", "no attachment unless asked")
}

func TestLargeIncompressibleIsNotAttached(t *testing.T) {
	raw := make([]byte, 1_000_000)
	rand.Read(raw)
	full := hex.EncodeToString(raw) // 2 M characters, ~1 MB gzipped
	b := Bundle{}
	PutText(b, "response_body", full, true, MarkerBody)
	assert.True(t, b[KeyTruncated].BoolVal())
	assert.NotContains(t, b, "response_body_gz", "an attachment over 900,000 bytes is dropped")
	assert.NotContains(t, b, "response_body_len")
	assert.Contains(t, b["response_body"].Str(), "完整内容过大未附带")
}

// FuzzLargeSplit: however the text is cut into writes, the result is the
// one of a single write (UTF-8 sequences split between writes included).
func FuzzLargeSplit(f *testing.F) {
	f.Add("中😀a\xffb", uint16(1), uint16(2))
	f.Add("\xe4\xb8", uint16(1), uint16(1))
	f.Add("", uint16(0), uint16(0))
	f.Fuzz(func(t *testing.T, s string, cut1, cut2 uint16) {
		texts := []string{s}
		if len(s) > 0 {
			// Over the threshold too, so the cut and the attachment run.
			texts = append(texts, strings.Repeat(s, MaxResultChars/len(s)+2))
		}
		for _, text := range texts {
			one := Bundle{}
			PutText(one, "k", text, true, nil)
			two := Bundle{}
			l := NewLarge("k", true, nil)
			a := min(int(cut1), len(text))
			bb := min(a+int(cut2), len(text))
			io.WriteString(l, text[:a])
			io.WriteString(l, text[a:bb])
			io.WriteString(l, text[bb:])
			l.Put(two)
			if one["k"].Str() != two["k"].Str() || one[KeyTruncated].BoolVal() != two[KeyTruncated].BoolVal() {
				t.Fatalf("split writes differ for %q at %d,%d", text, a, bb)
			}
			if l.Chars() != utf16Units([]byte(text)) {
				t.Fatalf("counted %d units, want %d", l.Chars(), utf16Units([]byte(text)))
			}
		}
	})
}

// The controller finds attachments by the fields alone: any key with a
// bytes "<key>_gz" beside it, whatever the capability is called.
func TestExpandByFields(t *testing.T) {
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	io.WriteString(zw, "full log text")
	zw.Close()
	b := Bundle{"log": String("full…"), "log_gz": Bytes(z.Bytes()), "log_len": Int(13), "notes_gz": String("not bytes")}
	got, errs := Expand(b)
	require.Empty(t, errs)
	assert.Equal(t, map[string]string{"log": "full log text"}, got)

	b["log_len"] = Int(99)
	_, errs = Expand(b)
	require.Len(t, errs, 1)
	assert.ErrorIs(t, errs[0], ErrAttachment, "a length that does not match is refused")

	_, errs = Expand(Bundle{"x_gz": Bytes([]byte("plain"))})
	require.Len(t, errs, 1)
	assert.ErrorIs(t, errs[0], ErrAttachment)
}

func TestRebindDelay(t *testing.T) {
	want := []int64{800, 1600, 3200, 6400, 8000, 8000}
	for n, ms := range want {
		assert.Equal(t, ms, RebindDelay(n).Milliseconds(), "attempt %d", n)
	}
	for _, n := range []int{31, 63, 1 << 40, -1, -1 << 40} {
		d := RebindDelay(n)
		assert.True(t, d >= RebindBase && d <= RebindMax, "attempt %d: %s", n, d)
	}
}

func TestNegotiate(t *testing.T) {
	got, err := Negotiate("aci-protocol-v2, aci-protocol-v1")
	require.NoError(t, err)
	assert.Equal(t, ProtocolV1, got)
	got, err = Negotiate("")
	require.NoError(t, err)
	assert.Equal(t, ProtocolV1, got, "a peer without aci_protocol speaks v1")
	_, err = Negotiate("aci-protocol-v9")
	assert.ErrorIs(t, err, ErrNoCommonProtocol)
	assert.Equal(t, "aci-protocol-v1", ProtocolResult()[ResultSupported].Str())
}

// FuzzUTF16Units: the fast count agrees with decoding rune by rune.
func FuzzUTF16Units(f *testing.F) {
	f.Add([]byte("abcdefgh中😀ijklmnop\xff\x80q"))
	f.Fuzz(func(t *testing.T, p []byte) {
		if got, want := utf16Units(p), utf16UnitsSlow(p); got != want {
			t.Fatalf("%d units, want %d for %q", got, want, p)
		}
	})
}

// A 10 MB result streamed through Large allocates far less than the
// body: the inline prefix and the attachment, never the whole value (a
// Large that buffered the body would allocate at least its 10 MB).
func TestLarge10MBMemoryBounded(t *testing.T) {
	chunk := []byte(strings.Repeat("<p>The quick brown fox jumps over the lazy dog.</p>\n", 32<<10/52+1)[:32<<10])
	const total = 10 << 20
	allocated := func() uint64 {
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.TotalAlloc
	}
	before := allocated()
	l := NewLarge("response_body", true, MarkerBody)
	for n := 0; n < total; n += len(chunk) {
		l.Write(chunk)
	}
	r := Bundle{}
	l.Put(r)
	used := allocated() - before
	require.True(t, r[KeyTruncated].BoolVal())
	require.False(t, r["response_body_gz"].IsZero())
	assert.Less(t, used, uint64(total/2), "allocated %d bytes for a %d-byte body", used, total)
}
