// Package ids makes and checks the runtime's identifiers (spec §2.5):
// a prefix, an underscore and a 26-character ULID (48-bit millisecond
// timestamp, 80 random bits, Crockford base32).
package ids

import (
	"crypto/rand"
	"encoding/hex"
	"regexp"
	"time"

	"github.com/oklog/ulid/v2"
)

// Prefixes of the runtime's ids.
const (
	Session = "ses"
	Task    = "tsk"
	Request = "req"
)

// New returns prefix + "_" + a fresh ULID for now.
func New(prefix string) string { return NewAt(prefix, time.Now()) }

// NewAt returns prefix + "_" + a ULID with the timestamp t and crypto-random entropy.
func NewAt(prefix string, t time.Time) string {
	return prefix + "_" + ulid.MustNew(ulid.Timestamp(t), rand.Reader).String()
}

var (
	sessionRE = regexp.MustCompile(`^ses_[0-9A-HJKMNP-TV-Z]{26}$`)
	taskRE    = regexp.MustCompile(`^tsk_[0-9A-HJKMNP-TV-Z]{26}$`)
	requestRE = regexp.MustCompile(`^req_[0-9A-HJKMNP-TV-Z]{26}$`)
)

// ValidSession reports whether s has the shape of a session id.
func ValidSession(s string) bool { return sessionRE.MatchString(s) }

// ValidTask reports whether s has the shape of a task id.
func ValidTask(s string) bool { return taskRE.MatchString(s) }

// ValidRequest reports whether s has the shape of a consent request id.
func ValidRequest(s string) bool { return requestRE.MatchString(s) }

// Time returns the timestamp encoded in an id made by New, and false when
// id is not a prefixed ULID.
func Time(id string) (time.Time, bool) {
	for i := 0; i < len(id); i++ {
		if id[i] == '_' {
			u, err := ulid.ParseStrict(id[i+1:])
			if err != nil {
				return time.Time{}, false
			}
			return ulid.Time(u.Time()), true
		}
	}
	return time.Time{}, false
}

// Pairing returns a desktop pairing id: "dp_" + 12 lowercase hex.
func Pairing() string {
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("ids: crypto/rand: " + err.Error())
	}
	return "dp_" + hex.EncodeToString(b[:])
}
