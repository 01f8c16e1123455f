package sms

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/agentoslab/agentlab/sampleapps/apptool"
)

// Sending limits (spec §9.5).
const (
	MaxSendText    = 500 // code points
	ConsentPreview = 600 // characters of JSON-encoded arguments the consent card shows
	DedupWindowMin = 2
	RateWindowMin  = 10
	zwj            = '\u200D'
)

// invisibleGraphic are graphic characters that render as nothing.
var invisibleGraphic = map[rune]bool{0x034F: true, 0x115F: true, 0x1160: true, 0x2800: true, 0x3164: true, 0xFFA0: true}

// Invisible reports whether r is a control or invisible character that an
// SMS text must not carry (the consent card would not show it). ZWJ is
// allowed: emoji sequences need it.
func Invisible(r rune) bool {
	if r == zwj {
		return false
	}
	return !unicode.IsGraphic(r) || invisibleGraphic[r]
}

// checkText returns the sentence for a text sms_send refuses, or "".
func checkText(text string) string {
	for _, r := range text {
		if Invisible(r) {
			return fmt.Sprintf("Parameter \"text\" contains a control or invisible character (U+%04X); send plain visible text on one line.", r)
		}
	}
	return ""
}

// recipient is a checked sms_send recipient.
type recipient struct {
	Given  string // as the model wrote it
	Digits string // with a leading + when given
}

// parseRecipient checks that to is exactly one phone number.
func parseRecipient(to string) (recipient, string) {
	to = strings.TrimSpace(to)
	if strings.ContainsAny(to, ",;/|&") || strings.Count(to, "+") > 1 {
		return recipient{}, "sms_send takes exactly one recipient; send one message per number."
	}
	var b strings.Builder
	longRuns := 0
	for _, tok := range strings.Fields(to) {
		if d := countDigits(tok); d >= 7 {
			longRuns++
		}
	}
	if longRuns > 1 {
		return recipient{}, "sms_send takes exactly one recipient; send one message per number."
	}
	for i, r := range to {
		switch {
		case r >= '0' && r <= '9':
			b.WriteRune(r)
		case r == '+' && i == 0:
			b.WriteRune(r)
		case r == ' ' || r == '-' || r == '(' || r == ')' || r == '.':
		default:
			return recipient{}, fmt.Sprintf("Parameter %q must be a phone number such as +8613700000001.", "to")
		}
	}
	d := b.String()
	n := countDigits(d)
	if n < 3 || n > 15 {
		return recipient{}, fmt.Sprintf("Parameter %q must be a phone number such as +8613700000001.", "to")
	}
	return recipient{Given: to, Digits: d}, ""
}

func countDigits(s string) int {
	n := 0
	for _, r := range s {
		if r >= '0' && r <= '9' {
			n++
		}
	}
	return n
}

// ShortOrService reports whether a number is a short or service number
// (spec §9.5): fewer than 7 digits, or a national (or +86) number starting
// with 10, 95, 96 or 106 — carriers' and banks' service lines, where a
// text can subscribe, pay or unsubscribe.
func ShortOrService(number string) bool {
	digits := strings.TrimPrefix(number, "+")
	if countDigits(digits) < 7 {
		return true
	}
	national := ""
	switch {
	case strings.HasPrefix(number, "+86"):
		national = digits[2:]
	case strings.HasPrefix(number, "0086"):
		national = digits[4:]
	case !strings.HasPrefix(number, "+") && !strings.HasPrefix(number, "00"):
		national = digits
	}
	for _, p := range []string{"10", "95", "96", "106"} {
		if strings.HasPrefix(national, p) {
			return true
		}
	}
	return false
}

// previewLen is the length, in code points, of the arguments as the
// consent card shows them: compact JSON of {"to":…,"text":…}.
func previewLen(to, text string) int {
	s, err := apptool.Compact(struct {
		To   string `json:"to"`
		Text string `json:"text"`
	}{to, text})
	if err != nil {
		return 0
	}
	return utf8.RuneCountInString(s)
}

// gsm7 is the GSM 03.38 default alphabet; gsm7Ext the extension table
// (two septets each).
const (
	gsm7    = "@£$¥èéùìòÇ\nØø\rÅåΔ_ΦΓΛΩΠΨΣΘΞÆæßÉ !\"#¤%&'()*+,-./0123456789:;<=>?¡ABCDEFGHIJKLMNOPQRSTUVWXYZÄÖÑÜ§¿abcdefghijklmnopqrstuvwxyzäöñüà"
	gsm7Ext = "^{}\\[~]|€\f"
)

// Parts is how many SMS parts text needs: GSM-7 texts take 160 septets in
// one part and 153 per part when split; anything else is UCS-2, 70 UTF-16
// units in one part and 67 per part.
func Parts(text string) int {
	septets, gsm := 0, true
	for _, r := range text {
		switch {
		case strings.ContainsRune(gsm7, r):
			septets++
		case strings.ContainsRune(gsm7Ext, r):
			septets += 2
		default:
			gsm = false
		}
	}
	if gsm {
		return split(septets, 160, 153)
	}
	return split(len(utf16.Encode([]rune(text))), 70, 67)
}

func split(n, single, multi int) int {
	if n <= single {
		return 1
	}
	return (n + multi - 1) / multi
}
