//go:build !agentosd_testtools

package main

import "github.com/agentoslab/agentlab/runtime/engine"

// testTools is nil in a release build: serve's tool layer is the
// extension host.
func testTools() engine.Tools { return nil }
