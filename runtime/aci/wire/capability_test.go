package wire

import (
	"encoding/json"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentoslab/agentlab/internal/golden"
)

func browserOpen() Capability {
	return Capability{
		ID: "browser_open", Description: "Open a URL in the browser and wait until the page is ready.",
		Params: []Param{
			{Name: "url", Type: TypeString, Required: true, Description: "The URL to open."},
			{Name: "title", Type: TypeString, Description: "A title for the tab."},
		},
		Results: []Param{
			{Name: "ready", Type: TypeBoolean, Description: "The page finished loading."},
			{Name: "url", Type: TypeString, Description: "The final URL."},
		},
		Flags:              []Flag{FlagBackground, FlagNoUI},
		RequirePermission:  "org.agentos.permission.BROWSE",
		RequireUserConfirm: false,
		SyncTimeout:        20 * time.Second,
	}
}

// The encoding keeps upstream's keys and order, so an upstream
// controller reads our callees (golden: testdata/capability.golden.json).
func TestCapabilityEncodingGolden(t *testing.T) {
	c := browserOpen()
	s, err := c.Encode()
	require.NoError(t, err)
	golden.Check(t, filepath.Join("testdata", "capability.golden.json"), []byte(s+"\n"))

	back, err := ParseCapability(s)
	require.NoError(t, err)
	assert.Equal(t, withVersion(c), back)
}

func withVersion(c Capability) *Capability {
	if c.Version == "" {
		c.Version = DefaultCapabilityVersion
	}
	return &c
}

// Elements as the three upstream variants write them.
func TestParseCapabilityUpstreamVariants(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want Capability
	}{
		{"AAR: version, upper-case flags", `{"id":"browser_read","version":"1.0","description":"Read the page.","params":[{"name":"mode","type":"string","required":false,"description":"full|clean"}],"result":[{"name":"html","type":"string","required":false,"description":""}],"flags":["BACKGROUND_EXECUTABLE","NO_UI_REQUIRED"],"requireUserConfirm":false}`,
			Capability{ID: "browser_read", Version: "1.0", Description: "Read the page.", Params: []Param{{Name: "mode", Type: TypeString, Description: "full|clean"}}, Results: []Param{{Name: "html", Type: TypeString}}, Flags: []Flag{FlagBackground, FlagNoUI}}},
		{"main: no version key, lower-case flags, org.json's escaped slash", `{"id":"http_request","description":"GET a URL like http:\/\/x","params":[{"name":"url","type":"string","required":true,"description":""}],"result":[],"flags":["background","no_ui","dangerous"],"requireUserConfirm":true}`,
			Capability{ID: "http_request", Version: "1.0", Description: "GET a URL like http://x", Params: []Param{{Name: "url", Type: TypeString, Required: true}}, Flags: []Flag{FlagBackground, FlagNoUI, FlagDangerous}, RequireUserConfirm: true}},
		{"AAR defaults: only an id", `{"id":"ping_me"}`, Capability{ID: "ping_me", Version: "1.0"}},
		{"param defaults: type string, not required", `{"id":"x","description":"d","params":[{"name":"q"}]}`,
			Capability{ID: "x", Version: "1.0", Description: "d", Params: []Param{{Name: "q", Type: TypeString}}}},
		{"upstream type aliases", `{"id":"x","description":"d","params":[{"name":"a","type":"byte[]"},{"name":"b","type":"float"},{"name":"c","type":"Uri"}]}`,
			Capability{ID: "x", Version: "1.0", Description: "d", Params: []Param{{Name: "a", Type: TypeBytes}, {Name: "b", Type: TypeDouble}, {Name: "c", Type: "Uri"}}}},
		{"a result is never required", `{"id":"x","description":"d","result":[{"name":"r","required":true}]}`,
			Capability{ID: "x", Version: "1.0", Description: "d", Results: []Param{{Name: "r", Type: TypeString}}}},
		{"org.json leniency: string booleans, numeric version, unknown keys", `{"id":"x","version":2,"description":"d","requireUserConfirm":"TRUE","requirePermission":null,"extra":{"a":1}}`,
			Capability{ID: "x", Version: "2", Description: "d", RequireUserConfirm: true}},
		{"unknown flags are kept, duplicates folded", `{"id":"x","description":"d","flags":["DANGEROUS_ACTION","dangerous","LOUD"]}`,
			Capability{ID: "x", Version: "1.0", Description: "d", Flags: []Flag{FlagDangerous, "LOUD"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseCapability(tt.in)
			require.NoError(t, err)
			assert.Equal(t, &tt.want, got)
		})
	}
	c, _ := ParseCapability(`{"id":"x","description":"d","flags":["DANGEROUS_ACTION"]}`)
	assert.True(t, c.NeedsConfirm(), "dangerous alone needs confirmation (upstream ignored the flag)")
}

func TestParseCapabilitiesSkipsBadElements(t *testing.T) {
	elems := []string{
		`{"id":"good_one","description":"Fine."}`,
		`{}`, // the AAR's placeholder for a capability that failed to serialize
		`[{"id":"array"}]`,
		`{"id":"v_desc","description":"1.0"}`,
		`{"id":"good_one","description":"Again."}`,
		`{"id":"bad params","description":"x"}`,
		`{"id":"p","description":"x","params":[{"name":"a"},{"name":"a"}]}`,
		`{"id":"q","description":"x","params":{"name":"a"}}`,
		`not json`,
		`{"id":"good_two","description":"Also fine."}`,
	}
	caps, errs := ParseCapabilities(elems)
	require.Len(t, caps, 2)
	assert.Equal(t, "good_one", caps[0].ID)
	assert.Equal(t, "Fine.", caps[0].Description)
	assert.Equal(t, "good_two", caps[1].ID)
	want := []struct {
		index int
		err   error
	}{{1, ErrNoID}, {2, ErrCapabilityJSON}, {3, ErrDescriptionIsVersion}, {4, ErrDuplicateID}, {5, ErrNoID}, {6, ErrBadParams}, {7, ErrBadParams}, {8, ErrCapabilityJSON}}
	require.Len(t, errs, len(want))
	for i, w := range want {
		var ce *CapabilityError
		require.ErrorAs(t, errs[i], &ce)
		assert.Equal(t, w.index, ce.Index)
		assert.ErrorIs(t, errs[i], w.err, errs[i].Error())
	}
	caps, errs = ParseCapabilities(nil)
	assert.Empty(t, caps)
	assert.Empty(t, errs, "an empty list is no error")
}

func TestDescriptionPitfall(t *testing.T) {
	for _, s := range []string{"1.0", "v2", "1.0.0", " 1.2.3-beta ", "10.4.1.7"} {
		assert.True(t, LooksLikeVersion(s), s)
	}
	for _, s := range []string{"Open 1.0 pages", "", "version", "1.0 is the version", "打开浏览器"} {
		assert.False(t, LooksLikeVersion(s), s)
	}
	_, err := ParseCapability(`{"id":"browser_open","description":"1.0"}`)
	assert.True(t, errors.Is(err, ErrDescriptionIsVersion))
}

// FuzzParseCapability: the parser never panics, and what it accepts
// encodes and parses back to the same capability.
func FuzzParseCapability(f *testing.F) {
	b, _ := json.Marshal(browserOpen())
	f.Add(string(b))
	f.Add(`{"id":"x","version":null,"params":[{"name":"a","type":null,"required":"true"}],"flags":[1,null,"no_ui"]}`)
	f.Add(`{"id":"x","syncTimeoutMs":1e20}`)
	f.Add(`{}`)
	f.Fuzz(func(t *testing.T, in string) {
		c, err := ParseCapability(in)
		if err != nil {
			var ce *CapabilityError
			if !errors.As(err, &ce) {
				t.Fatalf("error %T is not a *CapabilityError", err)
			}
			return
		}
		if !ValidID(c.ID) || LooksLikeVersion(c.Description) {
			t.Fatalf("accepted a bad capability %+v", c)
		}
		s, err := c.Encode()
		if err != nil {
			t.Fatal(err)
		}
		back, err := ParseCapability(s)
		if err != nil {
			t.Fatalf("re-parse of %s: %v", s, err)
		}
		a, _ := json.Marshal(c)
		z, _ := json.Marshal(back)
		if string(a) != string(z) {
			t.Fatalf("round trip changed it:\n%s\n%s", a, z)
		}
	})
}
