package wire

import (
	"encoding/json"
	"errors"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentoslab/agentlab/runtime/errcode"
)

type codeVectors struct {
	Numberings []struct {
		Variant Variant `json:"variant"`
		Name    string  `json:"name"`
		Number  int     `json:"number"`
		Code    int     `json:"code"`
	} `json:"numberings"`
	ControllerLiterals []struct {
		What   string `json:"what"`
		Number int    `json:"number"`
		Code   int    `json:"code"`
		Tool   string `json:"tool"`
	} `json:"controller_literals"`
	Messages []struct {
		What         string `json:"what"`
		ErrorCode    int    `json:"errorCode"`
		ErrorMessage string `json:"errorMessage"`
		Code         int    `json:"code"`
		Message      string `json:"message"`
		Suggestion   string `json:"suggestion"`
		Layer        string `json:"layer"`
		Unknown      bool   `json:"unknown"`
	} `json:"messages"`
}

func loadCodeVectors(t *testing.T) codeVectors {
	t.Helper()
	b, err := os.ReadFile("testdata/codes.json")
	require.NoError(t, err)
	var v codeVectors
	require.NoError(t, json.Unmarshal(b, &v))
	require.NotEmpty(t, v.Numberings)
	return v
}

// Every upstream number of the spec's tables is understood: a callee of
// the AAR, of main or of the governance branch, or the main app with
// QuroAciErrors, is read into the one code space.
func TestClassifyEveryUpstreamNumbering(t *testing.T) {
	v := loadCodeVectors(t)
	for _, n := range v.Numberings {
		t.Run(string(n.Variant)+"/"+n.Name, func(t *testing.T) {
			e := Classify(n.Number, "x")
			if n.Code == 0 {
				// Success numbers on a failed response are a callee bug.
				assert.Equal(t, Internal, e.Code)
				return
			}
			assert.Equal(t, Code(n.Code), e.Code)
			assert.True(t, e.Known)
			assert.Equal(t, n.Number, e.Raw)
			row, ok := e.Code.Lookup()
			require.True(t, ok)
			// The table records the alias it was read from.
			found := false
			for _, a := range row.Upstream {
				found = found || (a.Variant == n.Variant && a.Number == n.Number && a.Name == n.Name)
			}
			assert.True(t, found, "row %s lacks alias %+v", row.Name, n)
		})
	}
	// And the table holds no alias the spec does not.
	count := 0
	for _, r := range Table() {
		count += len(r.Upstream)
	}
	assert.Equal(t, len(v.Numberings), count)
}

func TestControllerLiteralsMapToToolCodes(t *testing.T) {
	v := loadCodeVectors(t)
	for _, l := range v.ControllerLiterals {
		e := Classify(l.Number, l.What)
		assert.Equal(t, Code(l.Code), e.Code, l.What)
		assert.Equal(t, errcode.Code(l.Tool), e.Code.Tool(), l.What)
		_, known := errcode.Lookup(e.Code.Tool())
		assert.True(t, known)
	}
}

func TestClassifyMessages(t *testing.T) {
	v := loadCodeVectors(t)
	for _, m := range v.Messages {
		t.Run(m.What, func(t *testing.T) {
			e := Classify(m.ErrorCode, m.ErrorMessage)
			assert.Equal(t, Code(m.Code), e.Code)
			assert.Equal(t, m.Message, e.Message)
			assert.Equal(t, !m.Unknown, e.Known)
			if m.Layer != "" || m.Suggestion != "" {
				require.NotNil(t, e.Detail)
				assert.Equal(t, m.Layer, e.Detail.Layer)
				assert.Equal(t, m.Suggestion, e.Detail.Suggestion)
			} else {
				assert.Nil(t, e.Detail)
			}
			assert.ErrorIs(t, e, Code(m.Code))
		})
	}
}

func TestStructuredRoundTrip(t *testing.T) {
	s := &Structured{Code: int(HTTPTLSError), Message: "bad cert", Suggestion: "pin a CA", Layer: LayerHTTP}
	enc := s.String()
	assert.Regexp(t, `^\{"aci_error":true,`, enc)
	got, ok := ParseStructured(enc)
	require.True(t, ok)
	assert.Equal(t, s, got)
	_, ok = ParseStructured(`{"aci_error":false,"code":1}`)
	assert.False(t, ok)
	_, ok = ParseStructured("plain")
	assert.False(t, ok)
}

func TestEveryCodeHasAToolCode(t *testing.T) {
	for _, r := range Table() {
		if r.Code == OK {
			continue
		}
		_, ok := errcode.Lookup(r.Tool)
		assert.True(t, ok, "%s has no runtime code", r.Name)
		assert.Equal(t, errcode.KindTool, r.Tool.Kind(), r.Name)
	}
}

func TestWrapKeepsBoth(t *testing.T) {
	base := errors.New("dial: connection refused")
	err := Wrap(ServiceUnavailable, base)
	assert.ErrorIs(t, err, ServiceUnavailable)
	assert.ErrorIs(t, err, base)
	var e *Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, ServiceUnavailable, e.Code)
}
