package sms

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// CodeMask replaces a verification code in read results.
const CodeMask = "••••••"

// codeWindow is how close (in characters) a code must be to a keyword.
const codeWindow = 30

// codeKeywords mark a nearby 4–8 digit run as a verification code.
// English ones match case-insensitively.
var codeKeywords = []string{
	"verification code", "verify code", "security code", "login code", "code", "otp", "passcode", "pin",
	"验证码", "校验码", "动态码", "动态密码", "确认码", "认证码", "安全码", "短信码", "登录码", "取件码",
}

// MaskCodes replaces every run of 4–8 digits that lies within 30
// characters of a code keyword with CodeMask (always six dots, so the
// length does not leak). It reports whether anything was masked.
func MaskCodes(body string) (string, bool) {
	rs := []rune(body)
	lower := []rune(strings.ToLower(body))
	if len(lower) != len(rs) {
		lower = rs // lower-casing changed the length; match as is
	}
	// Keyword spans in code points.
	var spans [][2]int
	for _, kw := range codeKeywords {
		k := []rune(kw)
		for i := 0; i+len(k) <= len(lower); i++ {
			if string(lower[i:i+len(k)]) != kw {
				continue
			}
			// An ASCII keyword must be a word of its own ("pin" not in "spinach").
			if isASCIIWord(kw) && (i > 0 && isLetter(lower[i-1]) || i+len(k) < len(lower) && isLetter(lower[i+len(k)])) {
				continue
			}
			spans = append(spans, [2]int{i, i + len(k)})
		}
	}
	if len(spans) == 0 {
		return body, false
	}
	var b strings.Builder
	masked := false
	for i := 0; i < len(rs); {
		if !isDigit(rs[i]) {
			b.WriteRune(rs[i])
			i++
			continue
		}
		j := i
		for j < len(rs) && isDigit(rs[j]) {
			j++
		}
		if n := j - i; n >= 4 && n <= 8 && near(spans, i, j) {
			b.WriteString(CodeMask)
			masked = true
		} else {
			b.WriteString(string(rs[i:j]))
		}
		i = j
	}
	return b.String(), masked
}

func isDigit(r rune) bool  { return r >= '0' && r <= '9' }
func isLetter(r rune) bool { return unicode.IsLetter(r) && r < utf8.RuneSelf }

func isASCIIWord(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// near reports whether the digit run [i, j) is within codeWindow
// characters of a keyword span.
func near(spans [][2]int, i, j int) bool {
	for _, s := range spans {
		if i >= s[1] && i-s[1] <= codeWindow {
			return true
		}
		if j <= s[0] && s[0]-j <= codeWindow {
			return true
		}
	}
	return false
}
