//go:build !agentos_noplatform

package platform

import (
	// The zones a GOOS=linux binary finds nowhere on Android.
	_ "time/tzdata"
)

// layerBuilt is false in builds with the tag agentos_noplatform.
const layerBuilt = true
