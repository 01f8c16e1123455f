//go:build agentos_noplatform

package platform

// layerBuilt is false in builds with the tag agentos_noplatform: the
// platform layer detects nothing and changes nothing.
const layerBuilt = false
