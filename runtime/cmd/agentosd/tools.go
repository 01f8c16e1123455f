//go:build agentosd_testtools

package main

import (
	"github.com/agentoslab/agentlab/runtime/engine"
	"github.com/agentoslab/agentlab/runtime/engine/enginetest"
)

// testTools is the tool layer of serve and stdio in a test build (go
// build -tags agentosd_testtools): the in-process test tools (echo,
// slow, fail, big, hang) instead of the extension host, so integration
// tests make real tool calls against the real binary.
func testTools() engine.Tools { return &enginetest.Tools{} }
