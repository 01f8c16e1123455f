package netprobe

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// On this host (plain Linux) the probe reports this process and Go's
// resolver.
func TestProbe(t *testing.T) {
	var out, errOut bytes.Buffer
	require.Zero(t, Main(context.Background(), []string{"localhost"}, &out, &errOut))
	var r Result
	require.NoError(t, json.Unmarshal(out.Bytes(), &r))
	assert.Equal(t, os.Getuid(), r.UID)
	assert.Equal(t, "ok", r.Socket)
	require.NotNil(t, r.Resolve)
	assert.Equal(t, "go", r.Resolve.Resolver)
	assert.NotEmpty(t, r.Resolve.Addrs)
	assert.Equal(t, 2, Main(context.Background(), []string{"a", "b"}, &out, &errOut))
}
