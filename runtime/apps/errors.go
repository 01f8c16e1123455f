package apps

import (
	"errors"
	"fmt"
)

// Reasons a bundle is rejected; match with errors.Is. The *BundleError
// that wraps one names the entry.
var (
	ErrNotBundle     = errors.New("not an app bundle (zip)")
	ErrTooLarge      = errors.New("over the size limit")
	ErrTooManyFiles  = errors.New("too many files")
	ErrBadName       = errors.New("bad entry name")
	ErrDuplicate     = errors.New("entry listed twice")
	ErrSpecial       = errors.New("not a regular file")
	ErrCompressed    = errors.New("entry is compressed (bundles store entries as they are)")
	ErrUnsigned      = errors.New("not signed")
	ErrBadSignature  = errors.New("signature does not verify")
	ErrBadManifest   = errors.New("malformed signed manifest")
	ErrMissing       = errors.New("entry in the signed manifest is missing")
	ErrExtra         = errors.New("entry is not in the signed manifest")
	ErrChanged       = errors.New("entry changed after signing")
	ErrBadApp        = errors.New("bad app.json")
	ErrLayout        = errors.New("bad bundle layout")
	ErrNonCanonical  = errors.New("zip structure differs from what agentosd app pack writes")
	ErrSourceChanged = errors.New("source file changed while packing")
)

// BundleError is a rejected bundle: the entry ("" for the whole bundle),
// the reason (one of the Err… values above) and a detail for people.
type BundleError struct {
	Entry  string
	Reason error
	Detail string
	// Cause is the underlying error, if any (an *AppError for ErrBadApp).
	Cause error
}

func (e *BundleError) Error() string {
	s := "bundle: "
	if e.Entry != "" {
		s += fmt.Sprintf("entry %q: ", e.Entry)
	}
	s += e.Reason.Error()
	if e.Detail != "" {
		s += " (" + e.Detail + ")"
	}
	return s
}

func (e *BundleError) Unwrap() []error {
	if e.Cause != nil {
		return []error{e.Reason, e.Cause}
	}
	return []error{e.Reason}
}

func bundleErr(entry string, reason error, format string, args ...any) *BundleError {
	d := ""
	if format != "" {
		d = fmt.Sprintf(format, args...)
	}
	return &BundleError{Entry: entry, Reason: reason, Detail: d}
}
