package platform

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The probe reports who ran it, a lookup and a GET through the platform.
func TestProbe(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	defer srv.Close()
	p := plain
	got := p.Probe(context.Background(), "localhost", srv.URL+"/generate_204")
	assert.Equal(t, os.Getuid(), got.UID)
	assert.Equal(t, "go", got.Platform.Resolver)
	require.NotNil(t, got.Lookup)
	assert.Empty(t, got.Lookup.Error)
	assert.NotEmpty(t, got.Lookup.Addrs)
	require.NotNil(t, got.Fetch)
	assert.Equal(t, http.StatusNoContent, got.Fetch.Status)

	got = p.Probe(context.Background(), "", "http://127.0.0.1:1/")
	assert.Nil(t, got.Lookup)
	require.NotNil(t, got.Fetch)
	assert.Contains(t, got.Fetch.Error, "connection refused")
}
